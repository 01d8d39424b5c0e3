package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEnvWithoutAsyncPreemption: the agent's second start gets preemption signals off ahead
// of whatever GODEBUG held, which it saves; a GODEBUG that names asyncpreemptoff is the
// operator's choice and is left alone.
func TestEnvWithoutAsyncPreemption(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		want   []string
		reexec bool
	}{
		{"no GODEBUG", []string{"A=1"},
			[]string{"A=1", "GODEBUG=asyncpreemptoff=1", "MORSE_GODEBUG_STARTED=unset"}, true},
		{"an empty GODEBUG", []string{"GODEBUG=", "A=1"},
			[]string{"A=1", "GODEBUG=asyncpreemptoff=1", "MORSE_GODEBUG_STARTED=set:"}, true},
		{"other settings, which come after and so win", []string{"GODEBUG=gctrace=1,madvdontneed=0"},
			[]string{"GODEBUG=asyncpreemptoff=1,gctrace=1,madvdontneed=0", "MORSE_GODEBUG_STARTED=set:gctrace=1,madvdontneed=0"}, true},
		{"the operator turned them on", []string{"GODEBUG=gctrace=1,asyncpreemptoff=0"}, nil, false},
		{"the operator turned them off", []string{"GODEBUG=asyncpreemptoff=1"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := envWithoutAsyncPreemption(tc.env)
			require.Equal(t, tc.reexec, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestAgentRunsWithoutAsyncPreemption: the binary starts again with preemption signals off
// (what the runtime read is in /proc/PID/environ), and a command it runs gets the GODEBUG
// the agent was started with, and no trace of the second start.
func TestAgentRunsWithoutAsyncPreemption(t *testing.T) {
	dir := t.TempDir()
	probe := writeFile(t, dir, "probe.sh", `agent=$(tr '\0' '\n' < /proc/$PPID/environ | sed -n 's/^GODEBUG=//p')
if [ -n "${GODEBUG+x}" ]; then set=1; else set=0; fi
if [ -n "${MORSE_GODEBUG_STARTED+x}" ]; then saved=1; else saved=0; fi
printf 'godebug agent="%s",child="%s",child_set=%si,saved=%si\n' "$agent" "$GODEBUG" "$set" "$saved"
`)
	conf := writeFile(t, dir, "p.conf", `
[agent]
  omit_hostname = true
[[inputs.exec]]
  commands = [["sh", "`+probe+`"]]
`)
	for _, tc := range []struct {
		name         string
		env          []string
		agent, child string
		childSet     int64
	}{
		{"no GODEBUG", nil, "asyncpreemptoff=1", "", 0},
		{"the operator's GODEBUG", []string{"GODEBUG=gctrace=0"}, "asyncpreemptoff=1,gctrace=0", "gctrace=0", 1},
		{"the operator's choice", []string{"GODEBUG=asyncpreemptoff=0"}, "asyncpreemptoff=0", "asyncpreemptoff=0", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, morseBin, "--test", "--config", conf)
			cmd.Env = append(envWithout("GODEBUG", "MORSE_GODEBUG_STARTED"), tc.env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			require.NoError(t, cmd.Run(), errb.String())
			got := byName(parseTestOutput(t, out.String()))["godebug"]
			require.Len(t, got, 1, out.String())
			for field, want := range map[string]any{
				"agent": tc.agent, "child": tc.child, "child_set": tc.childSet, "saved": int64(0),
			} {
				v, ok := got[0].Field(field)
				require.True(t, ok, field)
				require.Equal(t, want, v.Interface(), field)
			}
		})
	}
}

// envWithout is this process's env without the named variables.
func envWithout(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			env = append(env, kv)
		}
	}
	return env
}
