package morse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse/internal/selfstat"
)

// AgentOptions configure an Agent beyond its Config.
type AgentOptions struct {
	// Logger receives the agent's and the plugins' logs; slog.Default() if nil.
	Logger *slog.Logger
	// Hostname, when set, replaces both [agent] hostname and os.Hostname for the host tag.
	Hostname string
}

// agentState is what the hot path of a metric reads: the outputs to fan out to and the tags
// and precision to apply. A reload swaps it whole, atomically, so inputs never take a lock.
type agentState struct {
	outputs       []*runningOutput
	globalTags    []Tag // sorted, host included
	precision     time.Duration
	jitter        time.Duration // collection_jitter
	roundInterval bool
	// linesPass is set when line metrics would mostly reach the outputs as they are: at
	// least one output writes them, and every other one takes only the names it selects.
	linesPass bool
}

// Agent runs inputs and outputs from a Config: it gathers, fans metrics out to every output's
// buffer, flushes them, reloads and shuts down gracefully.
type Agent struct {
	cfg      *Config
	log      *slog.Logger
	hostname string
	stats    *selfstat.Registry
	state    atomic.Pointer[agentState]

	gathered, gatherErrors, written, dropped *Counter // internal_agent

	// Owned by the goroutine in Run.
	inputs   []*runningInput
	outputs  []*runningOutput
	retiring sync.WaitGroup // outputs that a reload removed, still flushing

	running  atomic.Bool
	reloadCh chan reloadRequest
}

// selfStatsUser is implemented by inputs.internal, which reports the agent's own counters.
type selfStatsUser interface {
	SetSelfStats(r *selfstat.Registry)
}

// precisionSetter is implemented by outputs that round timestamps to the agent's precision.
type precisionSetter interface {
	SetPrecision(d time.Duration)
}

// NewAgent checks cfg and prepares its plugins: loggers, stats and Init. Nothing runs until
// Run, Once or Test.
func NewAgent(cfg *Config, opts AgentOptions) (*Agent, error) {
	if err := cfg.Agent.Validate().Err(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: opts.Logger, stats: selfstat.New(), reloadCh: make(chan reloadRequest)}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.hostname = opts.Hostname
	if a.hostname == "" {
		a.hostname = cfg.Agent.Hostname
	}
	if a.hostname == "" {
		a.hostname, _ = os.Hostname()
	}
	c := func(field string) *Counter { return a.stats.Counter("internal_agent", nil, field) }
	a.gathered, a.gatherErrors = c("metrics_gathered"), c("gather_errors")
	a.written, a.dropped = c("metrics_written"), c("metrics_dropped")
	var errs []error
	for _, ic := range cfg.Inputs {
		ri, err := a.newRunningInput(ic)
		errs = append(errs, err)
		a.inputs = append(a.inputs, ri)
	}
	for _, oc := range cfg.Outputs {
		errs = append(errs, a.setupOutput(oc))
		a.outputs = append(a.outputs, &runningOutput{cfg: oc})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a.state.Store(a.newState(cfg, nil))
	return a, nil
}

// newState derives the hot-path state of cfg with the given outputs.
func (a *Agent) newState(cfg *Config, outputs []*runningOutput) *agentState {
	tags := make([]Tag, 0, len(cfg.GlobalTags)+1)
	for k, v := range cfg.GlobalTags {
		tags = append(tags, Tag{Key: k, Value: v})
	}
	if !cfg.Agent.OmitHostname && a.hostname != "" {
		if _, set := cfg.GlobalTags["host"]; !set {
			tags = append(tags, Tag{Key: "host", Value: a.hostname})
		}
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key })
	return &agentState{
		outputs: outputs, globalTags: tags,
		precision:     cfg.Agent.Precision.Duration(),
		jitter:        time.Duration(cfg.Agent.CollectionJitter),
		roundInterval: cfg.Agent.RoundInterval,
		linesPass:     linesPass(outputs),
	}
}

// linesPass reports whether line metrics would mostly reach outputs as they are: an output
// that does not write them must expand each one it takes, which costs more than parsing the
// line in the first place, so every such output must select by name what it takes.
func linesPass(outputs []*runningOutput) bool {
	writers := 0
	for _, ro := range outputs {
		switch {
		case ro.writesLines():
			writers++
		case !ro.selective():
			return false
		}
	}
	return writers > 0
}

func pluginLogger(base *slog.Logger, kind, name, alias string) *slog.Logger {
	l := base.With("plugin", kind+"."+name)
	if alias != "" {
		l = l.With("alias", alias)
	}
	return l
}

func (a *Agent) setupOutput(oc *OutputConfig) error {
	if s, ok := oc.Plugin.(LoggerSetter); ok {
		s.SetLogger(pluginLogger(a.log, "outputs", oc.Name, oc.Common.Alias))
	}
	if s, ok := oc.Plugin.(precisionSetter); ok {
		s.SetPrecision(a.cfg.Agent.Precision.Duration())
	}
	if i, ok := oc.Plugin.(Initializer); ok {
		if err := i.Init(); err != nil {
			return fmt.Errorf("outputs.%s (%s): init: %w", oc.Name, oc.Source, err)
		}
	}
	return nil
}

// startOutput creates the BatchWriter of ro, which connects in the background.
func (a *Agent) startOutput(ro *runningOutput) error {
	oc := ro.cfg
	inFlight := 1
	if cw, ok := oc.Plugin.(ConcurrentWriter); ok {
		inFlight = min(max(cw.MaxConcurrentWrites(), 1), maxInFlight)
	}
	w, err := NewBatchWriter(oc.Plugin, BatchOptions{
		MaxInFlight: inFlight,
		BatchSize:   oc.BatchSize, FlushInterval: oc.FlushInterval, FlushJitter: oc.FlushJitter,
		BufferLimit: oc.BufferLimit, Name: oc.Name, Alias: oc.Common.Alias,
		Logger: pluginLogger(a.log, "outputs", oc.Name, oc.Common.Alias),
		stats:  a.stats, agentWritten: a.written, agentDropped: a.dropped,
	})
	if err != nil {
		return fmt.Errorf("outputs.%s (%s): %w", oc.Name, oc.Source, err)
	}
	ro.w = w
	return nil
}

// startOutputs starts every configured output and points the fan-out at them. If one cannot
// start, those already started are closed again.
func (a *Agent) startOutputs() error {
	for _, ro := range a.outputs {
		if err := a.startOutput(ro); err != nil {
			return errors.Join(err, a.closeOutputs(a.outputs))
		}
	}
	a.state.Store(a.newState(a.cfg, a.outputs))
	return nil
}

// Run starts the outputs and inputs and runs until ctx ends, then shuts down: inputs stop
// first, then every output flushes until its buffer is empty or shutdown_timeout passes.
// The error reports, per output, what was left unsent.
func (a *Agent) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("morse: agent is already running")
	}
	defer a.running.Store(false)
	if err := a.startOutputs(); err != nil {
		return err
	}
	inputsCtx, stopInputs := context.WithCancel(context.Background())
	defer stopInputs()
	if err := a.startInputs(inputsCtx, a.inputs); err != nil {
		return errors.Join(err, a.closeOutputs(a.outputs))
	}
	a.log.Info("agent started", "inputs", len(a.inputs), "outputs", len(a.outputs))
	for {
		select {
		case <-ctx.Done():
			return a.shutdown()
		case req := <-a.reloadCh:
			req.reply <- a.applyReload(inputsCtx, req.cfg)
		}
	}
}

func (a *Agent) startInputs(ctx context.Context, inputs []*runningInput) error {
	for i, ri := range inputs {
		if err := ri.start(ctx); err != nil {
			stopAll(inputs[:i])
			return err
		}
	}
	return nil
}

func stopAll(inputs []*runningInput) {
	for _, ri := range inputs {
		ri.stop()
	}
}

// shutdown stops the inputs, then flushes and closes every output within shutdown_timeout.
func (a *Agent) shutdown() error {
	a.log.Info("shutting down", "shutdown_timeout", time.Duration(a.cfg.Agent.ShutdownTimeout))
	stopAll(a.inputs)
	err := a.closeOutputs(a.outputs)
	a.retiring.Wait()
	return err
}

// closeOutputs flushes and closes outputs in parallel, so that one slow sink does not use up
// the others' share of the shutdown timeout. It logs and returns what each left unsent.
func (a *Agent) closeOutputs(outputs []*runningOutput) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(a.cfg.Agent.ShutdownTimeout))
	defer cancel()
	errs := make([]error, len(outputs))
	var wg sync.WaitGroup
	for i, ro := range outputs {
		if ro.w == nil {
			continue
		}
		wg.Go(func() { errs[i] = ro.w.Close(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		var unsent *UnsentError
		if errors.As(err, &unsent) {
			a.log.Error("output left metrics unsent", "output", outputs[i].cfg.Name, "unsent", unsent.Left)
		} else if err == nil && outputs[i].w != nil {
			a.log.Info("output flushed", "output", outputs[i].cfg.Name, "written", outputs[i].w.Stats().Written)
		}
	}
	return errors.Join(errs...)
}

// OutputStatus is one output's name and counters, for programs that embed the agent.
type OutputStatus struct {
	Name, Alias string
	Stats       WriterStats
}

// Outputs reports every running output's counters.
func (a *Agent) Outputs() []OutputStatus {
	st := a.state.Load()
	out := make([]OutputStatus, 0, len(st.outputs))
	for _, ro := range st.outputs {
		if ro.w != nil {
			out = append(out, OutputStatus{Name: ro.cfg.Name, Alias: ro.cfg.Common.Alias, Stats: ro.w.Stats()})
		}
	}
	return out
}
