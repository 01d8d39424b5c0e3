package cardinality

import (
	"strings"
	"unsafe"
)

// mode is what the guard does with a tag key, decided once when the key is first seen.
type mode uint8

const (
	modeTrack mode = iota // count its values and act once they pass max_values
	modeAllow             // exempt: never counted, never acted on
	modeDeny              // forced: always acted on
)

// noLast marks a key with no last value.
const noLast = 0xff

// keyState is what the guard knows about one tag key of one measurement.
type keyState struct {
	key  string
	meas *measurement
	mode mode
	win  window
	// lastVal[:lastLen] is the value counted last in the current slot (see observe);
	// lastLen is noLast when there is none.
	lastVal [23]byte
	lastLen uint8

	tripped   bool  // the action applies to the key
	byServer  bool  // the last trip came from the database's refusal
	calmSince int64 // Unix ns since when a tripped key has been under max_values; 0 if not
	used      bool  // used since evict's hand last passed it
	ring      int   // its index in tracker.ring
	bytes     int   // what the key is charged against max_memory
}

// measurement holds the keys of one measurement.
type measurement struct {
	name string
	keys map[string]*keyState
	// recent holds the keys of the last metric of this measurement, in its tag order. Metrics
	// of one measurement mostly have the same tag keys, so comparing keys with these
	// (usually the same strings, which compare by pointer) spares a map lookup per tag.
	recent []*keyState
	dead   bool // forgotten with its last key
}

// Approximate sizes for the memory budget: the structs and the map entries that point at
// them. The test of the bound measures the heap, so these must not undercount much.
var (
	keyBytes  = int(unsafe.Sizeof(keyState{})) + 64
	measBytes = int(unsafe.Sizeof(measurement{})) + 64 + 256
)

// tracker holds every key the guard knows, and charges them against a budget.
type tracker struct {
	meas     map[string]*measurement
	bytes    int
	maxBytes int
	keys     int
	tripped  int // keys the action applies to: tripped ones and forced (deny) ones
	evicted  int64
	lastMeas *measurement
	ring     []*keyState // every key, in no particular order, for evict's hand
	hand     int
	newMode  func(key string) mode
	newEpoch func() int64
	seen     *seenSeries // series that passed untouched, for metrics held as text
}

func newTracker(maxBytes int, newMode func(string) mode, epoch func() int64) *tracker {
	t := &tracker{meas: map[string]*measurement{}, maxBytes: maxBytes, newMode: newMode, newEpoch: epoch,
		seen: newSeenSeries(maxBytes / 64)}
	t.bytes = t.seen.bytes()
	return t
}

// measurement returns the measurement named name, adding it when new. Consecutive metrics
// mostly share their measurement, so the last one found is tried first.
func (t *tracker) measurement(name string) *measurement {
	if ms := t.lastMeas; ms != nil && !ms.dead && ms.name == name {
		return ms
	}
	ms, ok := t.meas[name]
	if !ok {
		// The name may be a slice of a line metric's text, which shares an arena with
		// other lines: keeping the slice would keep the whole arena.
		name = strings.Clone(name)
		ms = &measurement{name: name, keys: map[string]*keyState{}}
		t.meas[name] = ms
		t.bytes += measBytes + len(name)
	}
	t.lastMeas = ms
	return ms
}

// key returns the state of key in ms, adding it when new.
func (t *tracker) key(ms *measurement, key string) *keyState {
	if ks, ok := ms.keys[key]; ok {
		return ks
	}
	key = strings.Clone(key) // as for the measurement's name
	ks := &keyState{key: key, meas: ms, mode: t.newMode(key), win: newWindow(t.newEpoch()), used: true, ring: len(t.ring),
		lastLen: noLast}
	t.ring = append(t.ring, ks)
	ks.bytes = keyBytes + len(key)
	if ks.mode == modeDeny {
		t.tripped++
	}
	ms.keys[key] = ks
	t.bytes += ks.bytes
	t.keys++
	return ks
}

// recentKey returns the state of the i-th tag key of a metric of ms, through ms.recent.
// It is small enough to be inlined in the per-tag loop, which the found key, the steady
// path, then costs no call.
func (t *tracker) recentKey(ms *measurement, i int, key string) *keyState {
	// forget clears the recent keys of a forgotten key's measurement, so none is stale.
	if r := ms.recent; i < len(r) && r[i].key == key {
		return r[i]
	}
	return t.newRecentKey(ms, i, key)
}

// newRecentKey is recentKey for a key that is not the i-th of the last metric of ms.
func (t *tracker) newRecentKey(ms *measurement, i int, key string) *keyState {
	ks := t.key(ms, key)
	if i < len(ms.recent) {
		ms.recent[i] = ks
	} else if i == len(ms.recent) {
		ms.recent = append(ms.recent, ks)
	}
	return ks
}

// charge adds n bytes to key ks.
func (t *tracker) charge(ks *keyState, n int) {
	ks.bytes += n
	t.bytes += n
}

// overBudget reports whether the keys take more than max_memory.
func (t *tracker) overBudget() bool { return t.bytes > t.maxBytes }

// evict forgets keys until the keys take at most 3/4 of the budget, so that eviction runs
// once per many new keys rather than per key. It picks them as the CLOCK algorithm does: a
// hand sweeps the keys, sparing (once) a key used since it last passed and forgetting one
// that was not, which approximates "least recently used" at a cost of a few keys looked at
// per key forgotten, and no more than a flag set per use. It returns how many it forgot.
func (t *tracker) evict() int {
	target := t.maxBytes / 4 * 3
	n := 0
	t.seen.forgetAll() // the hand clears used flags, which a skipped series would not set
	for t.bytes > target && len(t.ring) > 0 {
		if t.hand >= len(t.ring) {
			t.hand = 0
		}
		ks := t.ring[t.hand]
		if ks.used {
			ks.used = false
			t.hand++
			continue
		}
		t.forget(ks) // moves the last key into the hand's place, which is looked at next
		n++
	}
	t.evicted += int64(n)
	return n
}

// forget removes one key, and its measurement when that was its last key.
func (t *tracker) forget(ks *keyState) {
	ms := ks.meas
	delete(ms.keys, ks.key)
	clear(ms.recent) // recentKey must not find a forgotten key
	ms.recent = ms.recent[:0]
	last := t.ring[len(t.ring)-1]
	t.ring[ks.ring], last.ring = last, ks.ring
	t.ring[len(t.ring)-1] = nil
	t.ring = t.ring[:len(t.ring)-1]
	if ks.tripped || ks.mode == modeDeny {
		t.tripped--
	}
	t.bytes -= ks.bytes
	t.keys--
	if len(ms.keys) == 0 {
		ms.dead = true
		delete(t.meas, ms.name)
		t.bytes -= measBytes + len(ms.name)
	}
}

// trip makes the action apply to ks.
func (t *tracker) trip(ks *keyState) {
	if !ks.tripped {
		ks.tripped = true
		t.tripped++
		t.seen.forgetAll()
	}
}

// untrip makes ks normal again.
func (t *tracker) untrip(ks *keyState) {
	if ks.tripped {
		ks.tripped, ks.byServer, ks.calmSince = false, false, 0
		t.tripped--
		// No series the cache holds has a tripped key, so none needs forgetting.
	}
}
