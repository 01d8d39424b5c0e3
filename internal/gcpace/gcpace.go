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
//
// It also holds the goal steady. The live heap that a collection finds moves from one
// collection to the next (a buffer holds more or less at that moment), and with a fixed GOGC
// the heap's peak moves with it. The process keeps the pages of its highest peak so far, so
// its RSS follows the running maximum of those peaks and creeps up for as long as it runs:
// by 2.5% over the 8 minutes the churn soak compares, with the runtime's own accounting
// flat. So the goal is sized from the live heap's recent high and kept until that moves
// by an eighth up or a quarter down, and GOGC is set each second to reach that goal from
// whatever the last collection found live.
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
	// MaxPercent caps the goal at (100+MaxPercent)% of the live heap's recent high; 200.
	// It keeps an agent whose live heap is small from growing its heap all the way to
	// MinGoal: a flood into a nearly empty buffer (a gzip bomb, say) then grows the process
	// by three times what is live rather than five. Against 400 it cost about 1.5% more CPU
	// per line and 30% less peak RSS under a flood.
	MaxPercent int
	// Every is how often the live heap is read; 1 s.
	Every time.Duration
	// Smoothing is how long the live heap's recent high takes to fall to lower readings
	// (the time constant of its decay); 30 s.
	Smoothing time.Duration
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
	if o.Smoothing == 0 {
		o.Smoothing = 30 * time.Second
	}
}

// Goal returns the heap goal for a live heap of live bytes: MinGoal, but at least twice
// what is live (Go's default) and at most (100+maxPercent)% of it.
func Goal(live, minGoal uint64, maxPercent int) uint64 {
	if live == 0 {
		return minGoal
	}
	return max(2*live, min(minGoal, live*uint64(100+maxPercent)/100))
}

// percentFor returns the GOGC that puts the heap goal at goal when live bytes are live, but
// never less than Go's default of 100.
func percentFor(goal, live uint64) int {
	return max(100, int(goal*100/live)-100)
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
	p := pacer{opts: opts}
	p.percent = p.next(rt.live())
	original := rt.set(p.percent)
	defer rt.set(original)
	tick := time.NewTicker(opts.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Every change is applied, however small: one that moved the goal by less than a
		// fiftieth was once left out, and the goal then wandered by up to 2% with the live
		// heap, which is as much as the churn soak allows the RSS to grow in a day. Setting
		// GOGC takes the heap lock, not the world.
		if next := p.next(rt.live()); next != p.percent {
			rt.set(next)
			p.percent = next
		}
	}
}

// pacer holds the goal between readings of the live heap.
type pacer struct {
	opts    Options
	est     float64 // the live heap's recent high, decaying, in bytes
	goal    uint64  // the goal held
	percent int     // the GOGC set
}

// next returns the GOGC for a live heap of live bytes: the one that reaches the goal held,
// but never less than Go's default of 100.
//
// The goal is sized from the live heap's recent high: a reading above it raises it at once,
// and it falls towards lower readings over Smoothing. The goal moves up when that high calls
// for an eighth more, and down only when it calls for a quarter less, which an ordinary
// swing of the live heap never does. So it settles within the first high readings, at the
// level the peaks of a fixed GOGC would creep up to over hours, and stays there.
func (p *pacer) next(live uint64) int {
	if live == 0 {
		return p.opts.MaxPercent // nothing collected yet
	}
	if l := float64(live); l >= p.est {
		p.est = l
	} else {
		alpha := min(1, float64(p.opts.Every)/float64(p.opts.Smoothing))
		p.est += (l - p.est) * alpha
	}
	want := Goal(uint64(p.est), p.opts.MinGoal, p.opts.MaxPercent)
	if p.goal == 0 || want*8 > p.goal*9 || want*4 < p.goal*3 {
		p.goal = want
	}
	return percentFor(p.goal, live)
}
