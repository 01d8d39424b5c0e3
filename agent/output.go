package agent

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
)

// runningOutput is one configured output inside the agent: its filter and options, and the
// batch.Writer that buffers and writes what passes them. Its add (one metric) and addBatch
// (a batch, such as a listener's) are a metric's last stop in the agent: the filter, the
// expansion of a line metric that the output does not write as text, the rename, and then
// Writer.Write or WriteBatch.
type runningOutput struct {
	cfg *config.OutputConfig
	// settings and identity are the config's when the output was set up: a program may
	// resolve the same config again for a reload.
	settings   config.OutputSettings
	identity   string
	w          *batch.Writer
	deadLetter *batch.DeadLetterFile // nil without dead_letter_file
	// releaseDeadLetter gives back the output's hold on its dead-letter file, which may be
	// shared with the output that replaces it in a reload (deadLetterFiles).
	releaseDeadLetter func() error
	bufferDir         string // the disk buffer's directory; "" for memory
}

// newRunningOutput prepares oc's output, not yet started. An instance that this agent's
// writers already use is not initialised again.
func (a *Agent) newRunningOutput(oc *config.OutputConfig) (*runningOutput, error) {
	ro := &runningOutput{cfg: oc, settings: oc.Settings(), identity: oc.Identity()}
	return ro, a.setupOutput(oc, !a.instances.known(oc.Plugin))
}

// setupOutput gives oc's plugin its logger, precision and stats, and initialises it unless
// init is false: Init is called once per instance.
func (a *Agent) setupOutput(oc *config.OutputConfig, init bool) error {
	if s, ok := oc.Plugin.(morse.LoggerSetter); ok {
		s.SetLogger(pluginLogger(a.log, "outputs", oc.Name, oc.Common.Alias, oc.Common.LogLevel))
	}
	if s, ok := oc.Plugin.(morse.PrecisionSetter); ok {
		s.SetPrecision(a.cfg.Agent.Precision.Duration())
	}
	if s, ok := oc.Plugin.(morse.SelfStatsSetter); ok {
		s.SetSelfStats(a.stats) // an output that serializes counts internal_serializer there
	}
	if w, ok := oc.Plugin.(morse.EngineWatcher); ok {
		w.WatchEngine(a) // outputs.health asks for Stuck, Failing and Filling
	}
	if i, ok := oc.Plugin.(morse.Initializer); ok && init {
		if err := i.Init(); err != nil {
			return fmt.Errorf("outputs.%s (%s): init: %w", oc.Name, oc.Source, err)
		}
	}
	return nil
}

// startOutput creates the batch writer of ro, which connects in the background.
func (a *Agent) startOutput(ro *runningOutput) error {
	oc, s := ro.cfg, ro.settings
	opts := batch.Options{
		BatchSize: s.BatchSize, FlushInterval: s.FlushInterval, FlushJitter: s.FlushJitter,
		BufferLimit: s.BufferLimit, Name: oc.Name, Alias: oc.Common.Alias,
		RetryMaxAge:             time.Duration(oc.Common.RetryMaxAge),
		UnauthorizedRetryMaxAge: time.Duration(oc.Common.UnauthorizedRetryMaxAge),
		Logger:                  pluginLogger(a.log, "outputs", oc.Name, oc.Common.Alias, oc.Common.LogLevel),
		Initialized:             true, // setupOutput did it when the config was built
		Stats:                   a.stats, ID: instanceID("outputs", oc.Name, oc.Fingerprint, a.nextPlace()),
		Totals: &batch.Totals{Written: a.written, Dropped: a.dropped, Rejected: a.rejected, WriteErrors: a.writeErrs},
		OnDrop: a.onDrop,
		// The writer that used this instance before, in a reload, closes it first.
		ConnectAfter: a.instances.handOver(oc.Plugin),
	}
	newBuffer, dir, err := a.bufferFor(oc)
	if err != nil {
		return fmt.Errorf("outputs.%s (%s): %w", oc.Name, oc.Source, err)
	}
	opts.NewBuffer, ro.bufferDir = newBuffer, dir
	opts.BufferMaxBytes, opts.BufferMaxAge = a.memoryBounds(oc)
	opts.MemoryBudget = a.budget
	opts.HighWater, opts.LowWater = oc.Common.BufferConfig.Over(a.cfg.Agent.BufferConfig).WaterMarks()
	if path := oc.Common.DeadLetterFile; path != "" {
		dl, release, err := a.deadLetters.open(path, int64(oc.Common.DeadLetterMaxSize))
		if err != nil {
			return fmt.Errorf("outputs.%s (%s): %w", oc.Name, oc.Source, err)
		}
		ro.deadLetter, ro.releaseDeadLetter, opts.DeadLetter = dl, release, dl
	}
	w, err := batch.NewWriter(oc.Plugin, opts)
	if err != nil {
		return errors.Join(fmt.Errorf("outputs.%s (%s): %w", oc.Name, oc.Source, err), ro.closeDeadLetter())
	}
	ro.w = w
	a.instances.started(oc.Plugin, w)
	return nil
}

// label names the output in a report: outputs.NAME, or outputs.NAME::ALIAS.
func (ro *runningOutput) label() string {
	if ro.cfg.Common.Alias != "" {
		return "outputs." + ro.cfg.Name + "::" + ro.cfg.Common.Alias // as Telegraf names it in logs
	}
	return "outputs." + ro.cfg.Name
}

// closeDeadLetter lets go of the output's dead-letter file once its writer is closed: the
// writer's Close drops what is left at shutdown, and that goes to the dead letter too.
func (ro *runningOutput) closeDeadLetter() error {
	if ro.releaseDeadLetter == nil {
		return nil
	}
	err := ro.releaseDeadLetter()
	ro.deadLetter, ro.releaseDeadLetter = nil, nil
	return err
}

// writesLines reports whether line metrics may reach this output's buffer unexpanded: the
// output writes them as they are, and its filter, if any, tests names only.
func (ro *runningOutput) writesLines() bool {
	lw, ok := ro.cfg.Plugin.(morse.LineWriter)
	return ok && ro.cfg.Filter.NamesOnly() && !ro.cfg.Common.Rename.Set() && lw.WritesLines()
}

// rename applies the output's name_override, name_prefix and name_suffix, after its filter
// as in Telegraf. The metric is a value: the other outputs keep the name it had.
func (ro *runningOutput) rename(m morse.Metric) morse.Metric {
	if r := ro.cfg.Common.Rename; r.Set() {
		return m.WithName(r.Apply(m.Name()))
	}
	return m
}

// add filters m for this output and buffers it. A metric rejected by the filter is counted as
// filtered, not as dropped: the operator asked for it. A line metric is expanded after the
// filter, so that one the filter rejects by name never is, and renamed last. It reports
// whether the filter passed m.
func (ro *runningOutput) add(m morse.Metric) bool {
	if ro.cfg.Filter != nil {
		var ok bool
		if m, ok = ro.cfg.Filter.Apply(m); !ok {
			ro.w.CountFiltered(1)
			return false
		}
	}
	if _, line := m.Line(); line && !ro.writesLines() {
		m = m.Expanded()
	}
	_ = ro.w.Write(ro.rename(m)) // ErrClosed during a reload's hand-over is already counted
	return true
}

// addBatch buffers ms as add would each of them, and reports whether it buffered any.
// Metrics that this output's filter must judge, or that it must expand, go through
// addFiltered, so that ms is never changed.
func (ro *runningOutput) addBatch(ms []morse.Metric) bool {
	if ro.cfg.Filter != nil || !ro.writesLines() {
		return ro.addFiltered(ms) > 0
	}
	_ = ro.w.WriteBatch(ms) // ErrClosed during a reload's hand-over is already counted
	return len(ms) > 0
}

// batchScratch holds the slices addFiltered builds, so that a listener's steady stream of
// batches reuses them. The same batch reaches every output, so each output filters it into
// a slice of its own rather than in place.
var batchScratch = sync.Pool{New: func() any { return new([]morse.Metric) }}

// maxPooledBatch bounds the slices kept in batchScratch, so that one huge batch does not
// pin its memory for good.
const maxPooledBatch = 1 << 16

// addFiltered buffers what this output's filter passes of ms, expanded when the output
// needs it, in one write, as add would each of them. Metrics rejected are counted once for
// the batch. A disk buffer writes a record per write: metric by metric, a 1000-line body
// cost 1000 write(2) calls. It reports how many it buffered.
func (ro *runningOutput) addFiltered(ms []morse.Metric) int {
	sp := batchScratch.Get().(*[]morse.Metric)
	kept := (*sp)[:0]
	expand := !ro.writesLines()
	for _, m := range ms {
		if ro.cfg.Filter != nil {
			var ok bool
			if m, ok = ro.cfg.Filter.Apply(m); !ok {
				continue
			}
		}
		if _, line := m.Line(); line && expand {
			m = m.Expanded()
		}
		kept = append(kept, ro.rename(m))
	}
	if n := len(ms) - len(kept); n > 0 {
		ro.w.CountFiltered(n)
	}
	if len(kept) > 0 {
		_ = ro.w.WriteBatch(kept) // ErrClosed during a reload's hand-over is already counted
	}
	n := len(kept)
	clear(kept) // pin no metric's memory in the pool
	if cap(kept) <= maxPooledBatch {
		*sp = kept[:0]
		batchScratch.Put(sp)
	}
	return n
}
