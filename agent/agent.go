package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/selfstat"
)

// AgentOptions configure an Agent beyond its Config.
type AgentOptions struct {
	// Logger receives the agent's and the plugins' logs; slog.Default() if nil.
	Logger *slog.Logger
	// Version is the agent's version, which inputs.internal reports in its version tag;
	// "unknown" if empty, as in Telegraf.
	Version string
	// Hostname, when set, replaces both [agent] hostname and os.Hostname for the host tag.
	Hostname string
	// OnDrop, when set, is called with every loss of every output, as batch.Options.OnDrop
	// describes: evictions, refused writes, the refused part of partial writes and what is
	// left at shutdown. DropEvent.Output names the output by its alias, or its plugin name when it has none.
	OnDrop func(batch.DropEvent)
}

// agentState is what the hot path of a metric reads: the outputs to fan out to and the tags
// and precision to apply. A reload swaps it whole, atomically, so inputs never take a lock.
type agentState struct {
	inputs        []*runningInput // for the watchdog and status, never the hot path
	stage         *stage          // processors and aggregators; nil when there are none
	outputs       []*runningOutput
	globalTags    []morse.Tag   // sorted, host included
	precision     time.Duration // [agent] precision; zero rounds to the interval's unit
	jitter        time.Duration // collection_jitter
	offset        time.Duration // collection_offset
	roundInterval bool
	// linesPass is set when line metrics would mostly reach the outputs as they are: at
	// least one output writes them, and every other one takes only the names it selects.
	linesPass bool
}

// Agent runs inputs and outputs from a Config: it gathers, fans metrics out to every output's
// buffer, flushes them, reloads and shuts down gracefully.
type Agent struct {
	cfg      *config.Config
	log      *slog.Logger
	onDrop   func(batch.DropEvent)
	hostname string
	stats    *selfstat.Registry
	state    atomic.Pointer[agentState]

	agentStats              // internal_agent
	places     atomic.Int64 // see nextPlace

	// Owned by the goroutine in Run.
	stage    *stage
	stopAggs func() // stops the aggregators' goroutines after a last push
	inputs   []*runningInput
	outputs  []*runningOutput
	retiring sync.WaitGroup // outputs that a reload removed, still flushing
	// deadLetters holds the open dead-letter files, which a reload's old and new instances
	// of an output share.
	deadLetters deadLetterFiles
	// instances hands an output plugin instance from an old writer to a new one.
	instances outputInstances

	// clock is the coarse clock given to processors that read the time per metric; Run
	// runs it while one of them uses it.
	clock *clockRunner
	// budget bounds the memory buffers of every output together; a reload resizes it.
	budget *batch.MemoryBudget

	running  atomic.Bool
	reloadCh chan reloadRequest
	ready    chan struct{} // closed once Run has started every output and input
}

// NewAgent checks cfg and prepares its plugins: loggers, stats and Init. Nothing runs until
// Run, Once or Test.
func NewAgent(cfg *config.Config, opts AgentOptions) (*Agent, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: opts.Logger, onDrop: opts.OnDrop, stats: selfstat.New(), reloadCh: make(chan reloadRequest), ready: make(chan struct{}),
		clock: newClockRunner()}
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
	a.stats.SetVersion(opts.Version)
	a.agentStats = newAgentStats(a.stats)
	var errs []error
	for _, ic := range cfg.Inputs {
		ri, err := a.newRunningInput(ic)
		errs = append(errs, err)
		a.inputs = append(a.inputs, ri)
	}
	for _, oc := range cfg.Outputs {
		ro, err := a.newRunningOutput(oc)
		errs = append(errs, err)
		a.outputs = append(a.outputs, ro)
	}
	errs = append(errs, a.setupProcessing(cfg))
	links, err := findGuards(cfg.Processors, cfg.Outputs)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	linkGuards(links)
	a.stage = newStage(cfg)
	a.state.Store(a.newState(cfg, a.inputs, nil))
	for _, w := range cfg.Agent.Warnings() {
		a.log.Warn(w)
	}
	a.logConfigWarnings(cfg)
	a.setBudget(cfg)
	return a, nil
}

// logConfigWarnings logs, once for each config the agent takes, what its loading accepted
// but warned of (config.Config.Warnings).
func (a *Agent) logConfigWarnings(cfg *config.Config) {
	for _, w := range cfg.Warnings {
		a.log.Warn(w.String())
	}
}

// newState derives the hot-path state of cfg with the given outputs.
func (a *Agent) newState(cfg *config.Config, inputs []*runningInput, outputs []*runningOutput) *agentState {
	tags := make([]morse.Tag, 0, len(cfg.GlobalTags)+1)
	for k, v := range cfg.GlobalTags {
		tags = append(tags, morse.Tag{Key: k, Value: v})
	}
	if !cfg.Agent.OmitHostname && a.hostname != "" {
		if _, set := cfg.GlobalTags["host"]; !set {
			tags = append(tags, morse.Tag{Key: "host", Value: a.hostname})
		}
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key })
	return &agentState{
		inputs: inputs, outputs: outputs, globalTags: tags, stage: a.stage,
		precision:     time.Duration(cfg.Agent.Precision),
		jitter:        time.Duration(cfg.Agent.CollectionJitter),
		offset:        time.Duration(cfg.Agent.CollectionOffset),
		roundInterval: cfg.Agent.RoundInterval,
		linesPass:     a.stage == nil && linesPass(outputs),
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
		case !ro.cfg.Filter.PassesNamed():
			return false
		}
	}
	return writers > 0
}

// startOutputs starts every configured output and points the fan-out at them. If one cannot
// start, those already started are closed again.
func (a *Agent) startOutputs() error {
	for _, ro := range a.outputs {
		if err := a.startOutput(ro); err != nil {
			return errors.Join(err, a.closeOutputs(a.outputs))
		}
	}
	a.state.Store(a.newState(a.cfg, a.inputs, a.outputs))
	return nil
}

// Ready is closed once Run has started every output and every input, which is when a
// service manager may be told the agent is ready. It stays open if Run fails to start.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// checkConfig computes the settings of cfg's plugins from their Common options and [agent],
// and checks them, so that settings set anywhere in a program's build of cfg apply.
func checkConfig(cfg *config.Config) error {
	return cfg.Resolve()
}

// Run starts the outputs and inputs and runs until ctx ends, then shuts down: inputs stop
// first, then every output flushes until its buffer is empty or shutdown_timeout passes.
// The error reports, per output, what was left unsent.
func (a *Agent) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("morse: agent is already running")
	}
	defer a.running.Store(false)
	a.clock.start()
	defer a.clock.halt()
	if err := a.startOutputs(); err != nil {
		return err
	}
	a.stopAggs = a.startAggregators(a.stage, nil)
	inputsCtx, stopInputs := context.WithCancel(context.Background())
	defer stopInputs()
	if err := a.startInputs(inputsCtx, a.inputs); err != nil {
		a.stopAggs()
		return errors.Join(err, a.closeOutputs(a.outputs))
	}
	a.log.Info("agent started", "inputs", len(a.inputs), "outputs", len(a.outputs))
	close(a.ready)
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

// OutputStatus is one output's name and counters, for programs that embed the agent.
type OutputStatus struct {
	Name, Alias string
	Stats       batch.Stats
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
