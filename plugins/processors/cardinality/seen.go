package cardinality

import (
	"strings"

	"github.com/cespare/xxhash/v2"
)

// seenSeries remembers, for metrics held as line-protocol text, the series (measurement
// and tag set, as text) that passed the guard untouched since its state last changed. A
// series seen again in the same slot adds nothing: each of its values is already counted in
// the slot, and none of its keys is acted on. So its next metrics skip the scan of the tag
// set and a lookup per tag, which is the guard's steady path under a listener: the same
// hosts sending the same series every interval.
//
// The cache is a fixed array indexed by the text's hash, each entry the full 64-bit hash
// and the generation it was stored in. A new generation begins whenever what a skipped
// series would have met could differ: a new slot (its values must be counted in it), a key
// tripped or reset (the action may now apply), and an eviction pass (the keys of a series
// in use must be marked used before the next pass, or they could be forgotten). Entries of
// older generations are dead; nothing needs clearing. A nil cache holds nothing.
type seenSeries struct {
	entries []seenEntry
	gen     uint64
}

type seenEntry struct {
	hash, gen uint64
}

// seenEntryBytes is the size of one entry, charged against max_memory.
const seenEntryBytes = 16

// newSeenSeries returns a cache of about bytes, a power of two entries, at least 64.
func newSeenSeries(bytes int) *seenSeries {
	n := 64
	for n*2*seenEntryBytes <= bytes {
		n *= 2
	}
	return &seenSeries{entries: make([]seenEntry, n), gen: 1}
}

// bytes is what the cache takes.
func (c *seenSeries) bytes() int {
	if c == nil {
		return 0
	}
	return len(c.entries) * seenEntryBytes
}

// key returns the series part of a line (up to its first space) and its hash, or false when
// that space is escaped: the series then ends further on, past text that a plain search
// cannot split, and such a line is never cached.
func seriesKey(line string) (uint64, bool) {
	sp := strings.IndexByte(line, ' ')
	if sp <= 0 || line[sp-1] == '\\' {
		return 0, false
	}
	return xxhash.Sum64String(line[:sp]), true
}

// seen reports whether the series hashed h passed untouched in this generation.
func (c *seenSeries) seen(h uint64) bool {
	if c == nil {
		return false
	}
	e := &c.entries[h&uint64(len(c.entries)-1)]
	return e.hash == h && e.gen == c.gen
}

// remember stores that the series hashed h passed untouched.
func (c *seenSeries) remember(h uint64) {
	if c == nil {
		return
	}
	c.entries[h&uint64(len(c.entries)-1)] = seenEntry{hash: h, gen: c.gen}
}

// forgetAll starts a new generation.
func (c *seenSeries) forgetAll() {
	if c != nil {
		c.gen++
	}
}
