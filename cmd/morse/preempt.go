package main

import (
	"os"
	"strings"
)

// The agent runs with Go's signal-based preemption off (GODEBUG=asyncpreemptoff=1).
//
// Each preemption signal makes the runtime look up the function it interrupted in the
// binary's tables, and each lookup of a function it has not met before reads a page of those
// tables that was never read: the page joins the agent's RSS for good, with the kernel's
// read-ahead around it. The runtime sent the agent about 0.7 such signals a second in the
// churn soak (perf's signal:signal_generate), landing in whatever code happened to run, so
// its RSS crept up all day with no leak behind it: by 0.2 to 0.3 MiB in the soak's 10
// minutes, about 1% of it, and with the signals off not at all.
//
// What the signals are for, preempting a goroutine that loops for long without a call, the
// agent does not need: its loops call functions, where goroutines are preempted without a
// signal, and at worst a collection waits a little longer for a loop to end.
//
// The setting is read only when the process starts, so the agent executes itself again with
// it, unless GODEBUG already says what asyncpreemptoff should be.

const (
	preemptOff = "asyncpreemptoff=1"
	// savedGODEBUG carries the GODEBUG that the agent was started with through its second
	// start, which puts it back, so that the commands the agent runs get what it got.
	savedGODEBUG = "MORSE_GODEBUG_STARTED"
)

// withoutAsyncPreemption executes the agent again with preemption signals off, through exec,
// and restores GODEBUG once it has been. It returns only when the agent is to run as it is:
// after the second start, when GODEBUG names asyncpreemptoff already, or when exec fails.
func withoutAsyncPreemption(exec func(env []string) error) {
	if saved, ok := os.LookupEnv(savedGODEBUG); ok {
		restoreGODEBUG(saved)
		return
	}
	if env, ok := envWithoutAsyncPreemption(os.Environ()); ok {
		_ = exec(env) // it returns only on failure: the agent then runs with the signals
	}
}

// envWithoutAsyncPreemption returns env with preemption signals turned off, and the GODEBUG
// it had saved, or false when env's GODEBUG already decides.
func envWithoutAsyncPreemption(env []string) ([]string, bool) {
	godebug, set := "", false
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug, set = v, true
			continue
		}
		out = append(out, kv)
	}
	for s := range strings.SplitSeq(godebug, ",") {
		if strings.HasPrefix(s, "asyncpreemptoff=") {
			return nil, false
		}
	}
	saved, with := "unset", preemptOff
	if set {
		saved = "set:" + godebug
	}
	if godebug != "" {
		with += "," + godebug
	}
	return append(out, "GODEBUG="+with, savedGODEBUG+"="+saved), true
}

// restoreGODEBUG puts back the GODEBUG that saved records. The runtime keeps what it read at
// the start, and takes the change only for the settings it may change while it runs, which
// then have the values they had in the first start.
func restoreGODEBUG(saved string) {
	os.Unsetenv(savedGODEBUG)
	if v, ok := strings.CutPrefix(saved, "set:"); ok {
		os.Setenv("GODEBUG", v)
	} else {
		os.Unsetenv("GODEBUG")
	}
}
