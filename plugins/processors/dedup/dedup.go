// Package dedup is the dedup processor: it drops metrics whose field values repeat those of
// the last metric passed for their series, with Telegraf's processors.dedup options and
// behaviour, and a bound on the series it remembers.
package dedup

import (
	_ "embed"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Filter metrics with repeating field values"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "dedup",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return New() },
	})
}

// DefaultMaxSeries is the default of max_series.
const DefaultMaxSeries = 100_000

// Dedup remembers the last metric it passed for each series and drops a metric whose fields
// all equal those of the remembered one, until the remembered one is DedupInterval old.
type Dedup struct {
	DedupInterval morse.Duration `toml:"dedup_interval"`
	MaxSeries     int            `toml:"max_series"`

	// Now is the clock; nil means time.Now. Tests set it to make time deterministic.
	Now func() time.Time `toml:"-"`

	mu        sync.Mutex
	cache     map[uint64]*entry
	lru       list // oldest save first
	flushTime time.Time

	evictions int64 // so far; counted and logged once per Apply, not per series

	log       *slog.Logger
	evictLog  *throttle.Throttle
	evicted   *selfstat.Counter
	remembers *selfstat.Counter
}

// entry is one remembered series: the last metric passed, merged with the fields that later
// metrics of the same timestamp added.
type entry struct {
	m          morse.Metric
	id         uint64
	prev, next *entry
}

// New returns a Dedup with Telegraf's default interval of ten minutes.
func New() *Dedup {
	return &Dedup{DedupInterval: morse.Duration(10 * time.Minute), MaxSeries: DefaultMaxSeries}
}

// Validate checks the options.
func (d *Dedup) Validate() error {
	if d.DedupInterval <= 0 {
		return morse.Errorf("dedup_interval", "must be positive, got %s", d.DedupInterval)
	}
	if d.MaxSeries < 1 {
		return morse.Errorf("max_series", "must be at least 1, got %d", d.MaxSeries)
	}
	return nil
}

// SetLogger gives the processor the engine's logger.
func (d *Dedup) SetLogger(l *slog.Logger) { d.log = l }

// SetStats gives the processor its self-metric counters: series (remembered now) and
// series_evicted (forgotten because max_series was reached).
func (d *Dedup) SetStats(s *selfstat.PluginStats) {
	d.remembers, d.evicted = s.Counter("series"), s.Counter("series_evicted")
}

// Init prepares the cache.
func (d *Dedup) Init() error {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.evicted == nil {
		d.SetStats(selfstat.NewPluginStats(nil, "internal_dedup", nil))
	}
	d.evictLog = throttle.New(5 * time.Minute)
	d.cache = make(map[uint64]*entry)
	d.flushTime = d.Now()
	return nil
}

// Len is the number of series remembered.
func (d *Dedup) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cache)
}

// Apply drops the repeated metrics of in, reusing its backing array.
func (d *Dedup) Apply(in []morse.Metric) []morse.Metric {
	now := d.Now()
	interval := time.Duration(d.DedupInterval)
	d.mu.Lock()
	defer d.mu.Unlock()
	out := in[:0]
	evicted := d.evictions
	for _, m := range in {
		m = m.Expanded()
		if d.pass(m, now, interval) {
			out = append(out, m)
		}
	}
	d.cleanup(now, interval)
	d.remembers.Set(int64(len(d.cache)))
	if n := d.evictions - evicted; n > 0 {
		d.evicted.Add(n)
		d.evictLog.Log(d.log, slog.LevelWarn, "dedup: max_series reached; forgot the series that passed a metric longest ago",
			"max_series", d.MaxSeries, "forgotten", n)
	}
	return out
}

// pass decides on one metric, as Telegraf's dedup does.
func (d *Dedup) pass(m morse.Metric, now time.Time, interval time.Duration) bool {
	id := m.HashID()
	e := d.cache[id]
	if e == nil || !sameSeries(e.m, m) || now.Sub(e.m.Time()) >= interval {
		d.save(e, id, m)
		return true
	}
	sameTime := m.Time().Equal(e.m.Time())
	added := false
	for _, f := range m.Fields() {
		v, ok := e.m.Field(f.Key)
		switch {
		case ok && v != f.Value:
			d.save(e, id, m)
			return true
		case !ok && sameTime:
			// The same series and timestamp with a field the remembered metric lacks:
			// inputs that emit one point in several metrics do this. Merge it, so that
			// the next repeat of either part is recognised.
			e.m = e.m.WithField(f.Key, f.Value)
			added = true
		}
	}
	return sameTime && added
}

// sameSeries guards against two series that share a 64-bit hash.
func sameSeries(a, b morse.Metric) bool {
	if a.Name() != b.Name() || len(a.Tags()) != len(b.Tags()) {
		return false
	}
	for i, t := range a.Tags() {
		if b.Tags()[i] != t {
			return false
		}
	}
	return true
}

// save remembers m for its series, replacing e (which may be nil, or hold another series
// with the same hash), and makes it the most recently saved.
func (d *Dedup) save(e *entry, id uint64, m morse.Metric) {
	if e != nil {
		e.m = m
		d.lru.remove(e)
		d.lru.push(e)
		return
	}
	if len(d.cache) >= d.MaxSeries {
		d.evictOldest()
	}
	e = &entry{m: m, id: id}
	d.cache[id] = e
	d.lru.push(e)
}

func (d *Dedup) evictOldest() {
	old := d.lru.head
	d.lru.remove(old)
	delete(d.cache, old.id)
	d.evictions++
}

// cleanup forgets expired series, at most once per interval, as Telegraf does, so that the
// scan costs little per metric.
func (d *Dedup) cleanup(now time.Time, interval time.Duration) {
	if now.Sub(d.flushTime) < interval {
		return
	}
	d.flushTime = now
	for id, e := range d.cache {
		if now.Sub(e.m.Time()) >= interval {
			d.lru.remove(e)
			delete(d.cache, id)
		}
	}
}

// list is a doubly linked list of entries, oldest first. It is written out rather than
// taken from container/list so that an entry is one allocation, not two.
type list struct{ head, tail *entry }

func (l *list) push(e *entry) {
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *list) remove(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
