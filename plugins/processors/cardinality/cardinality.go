// Package cardinality is morse's cardinality guard, processors.cardinality: it estimates
// how many distinct values each tag key of each measurement takes in a sliding window, and
// when a key passes max_values, turns that tag into a field (or drops the tag, or the
// metric), so that a tag that never stops changing cannot grow the database's index without
// bound.
package cardinality

import (
	_ "embed"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Keep runaway tags from hurting the database: a tag key whose values never stop changing becomes a field"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "cardinality",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return New() },
	})
}

// The actions.
const (
	ActionField      = "field"
	ActionDropTag    = "drop_tag"
	ActionDropMetric = "drop_metric"
)

// Defaults.
const (
	DefaultMaxValues = 10_000
	DefaultWindow    = time.Hour
	DefaultMaxMemory = 16 << 20
)

// Guard is the cardinality guard. It is safe for concurrent use: Apply from every input's
// goroutine and Trip from an output's.
type Guard struct {
	MaxValues  int            `toml:"max_values"`
	Window     morse.Duration `toml:"window"`
	Action     string         `toml:"action"`
	Allow      []string       `toml:"allow"`
	Deny       []string       `toml:"deny"`
	ResetAfter morse.Duration `toml:"reset_after"`
	MaxMemory  morse.Size     `toml:"max_memory"`

	// Now is the clock. Tests set it to make time deterministic. nil means the system's
	// monotonic clock, or the agent's coarse clock once SetCoarseClock gives one fine
	// enough for the window.
	Now func() time.Time `toml:"-"`

	allow, deny *glob.Matcher
	slotWidth   int64 // ns
	clock       func() int64
	coarse      func() time.Time // from SetCoarseClock
	coarseRes   time.Duration

	mu      sync.Mutex
	t       *tracker
	epoch   int64    // the current slot number, set at the start of each Apply
	nowNano int64    // the time of the current Apply
	events  []event  // log lines to write once the lock is released
	keep    []string // scratch for building the tags of an acted-on metric
	stats   counters

	log       *slog.Logger
	evictLog  *throttle.Throttle
	conflicts *throttle.Throttle
}

// New returns a guard with its defaults.
func New() *Guard {
	return &Guard{MaxValues: DefaultMaxValues, Window: morse.Duration(DefaultWindow), Action: ActionField,
		MaxMemory: DefaultMaxMemory}
}

// minMaxMemory is the least max_memory accepted: room for a few hot keys.
const minMaxMemory = 256 << 10

// Validate checks the options and compiles the globs.
func (g *Guard) Validate() error {
	var errs []error
	if g.MaxValues < 1 {
		errs = append(errs, morse.Errorf("max_values", "must be at least 1, got %d", g.MaxValues))
	}
	if time.Duration(g.Window) < time.Second {
		errs = append(errs, morse.Errorf("window", "must be at least 1s, got %s", g.Window))
	}
	switch g.Action {
	case ActionField, ActionDropTag, ActionDropMetric:
	default:
		errs = append(errs, morse.Errorf("action", "must be %q, %q or %q, got %q", ActionField, ActionDropTag, ActionDropMetric, g.Action))
	}
	if g.ResetAfter < 0 {
		errs = append(errs, morse.Errorf("reset_after", "must not be negative"))
	}
	if g.MaxMemory < minMaxMemory {
		errs = append(errs, morse.Errorf("max_memory", "must be at least 256KiB, got %d bytes", int64(g.MaxMemory)))
	}
	var err error
	g.allow, err = glob.Compile("allow", g.Allow)
	errs = append(errs, err)
	g.deny, err = glob.Compile("deny", g.Deny)
	errs = append(errs, err)
	return errors.Join(errs...)
}

// SetLogger gives the guard the engine's logger.
func (g *Guard) SetLogger(l *slog.Logger) { g.log = l }

// SetStats gives the guard its self-metric counters, reported under internal_cardinality
// (see counters).
func (g *Guard) SetStats(s *selfstat.PluginStats) { g.stats = newCounters(s) }

// Init validates a guard built in code and prepares its state.
func (g *Guard) Init() error {
	if err := g.Validate(); err != nil {
		return err
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.stats.changed == nil {
		g.SetStats(selfstat.NewPluginStats(nil, "internal_cardinality", nil))
	}
	g.evictLog, g.conflicts = throttle.New(5*time.Minute), throttle.New(5*time.Minute)
	g.slotWidth = int64(g.Window) / (slots - 1)
	g.clock = g.pickClock()
	g.t = newTracker(int(g.MaxMemory), g.modeOf, func() int64 { return g.epoch })
	g.epoch = floorDiv(g.clock(), g.slotWidth)
	return nil
}

// modeOf decides what to do with a new key. A key that deny matches is acted on even when
// allow matches it too: protecting the database is what the guard is for.
func (g *Guard) modeOf(key string) mode {
	switch {
	case g.deny.Match(key):
		return modeDeny
	case g.allow.Match(key):
		return modeAllow
	}
	return modeTrack
}

// Trip makes the guard act on key of measurement from the next metric on, as though its
// values had passed max_values. The InfluxDB output calls it when the server refuses a point
// with "max-values-per-tag limit exceeded" (its cardinality_guard option), so that the next points
// of that key are converted before they are refused too. A key that allow exempts stays
// exempt. It is safe to call at any time, from any goroutine.
func (g *Guard) Trip(measurement, key string) {
	now := g.clock()
	g.mu.Lock()
	ks := g.t.key(g.t.measurement(measurement), key)
	ks.used = true
	var ev event
	switch {
	case ks.mode == modeAllow:
		ev = event{kind: evServerAllowed, measurement: measurement, key: key}
	case ks.mode == modeDeny || ks.tripped:
		ks.byServer = true
	default:
		g.t.trip(ks)
		ks.byServer, ks.calmSince = true, now
		g.stats.serverTrips.Incr()
		ev = event{kind: evServerTrip, measurement: measurement, key: key, estimate: ks.win.estimate()}
	}
	g.stats.setGauges(g.t)
	g.mu.Unlock()
	if ev.kind != evNone {
		g.logEvent(ev)
	}
}

// event is something worth a log line, found under the lock and logged after it.
type event struct {
	kind             eventKind
	measurement, key string
	estimate         float64
}

type eventKind uint8

const (
	evNone eventKind = iota
	evTrip
	evServerTrip
	evServerAllowed
	evReset
)

func (g *Guard) logEvent(ev event) {
	args := []any{"measurement", ev.measurement, "key", ev.key, "estimate", int64(ev.estimate + 0.5)}
	switch ev.kind {
	case evTrip:
		g.log.Warn("cardinality: tag key passed max_values; acting on it from now on",
			append(args, "max_values", g.MaxValues, "window", g.Window.String(), "action", g.Action)...)
	case evServerTrip:
		g.log.Warn("cardinality: the database refused a new value of this tag key (max-values-per-tag); acting on it from now on",
			append(args, "action", g.Action)...)
	case evServerAllowed:
		g.log.Warn("cardinality: the database refused a new value of this tag key (max-values-per-tag), but allow exempts it; leaving it as it is",
			"measurement", ev.measurement, "key", ev.key)
	case evReset:
		g.log.Info("cardinality: tag key calmed down; back to normal",
			append(args, "reset_after", g.ResetAfter.String())...)
	}
}
