package cardinality

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestSeenSeriesChangesNothing: metrics held as text, which may skip the guard through the
// cache of series seen, come out exactly as they do from a guard without the cache, with
// the same counters, and as the same metrics expanded, which never use it: through new
// slots, keys tripping and calming down (reset_after), and the eviction of keys when
// max_memory is small. Each case is a random stream, replayed through three guards.
func TestSeenSeriesChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(*Guard)
	}{
		{"field", func(g *Guard) {}},
		{"drop_tag with reset_after", func(g *Guard) { g.Action, g.ResetAfter = ActionDropTag, morse.Duration(20*time.Minute) }},
		{"field with reset_after", func(g *Guard) { g.ResetAfter = morse.Duration(20 * time.Minute) }},
		{"drop_metric", func(g *Guard) { g.Action = ActionDropMetric }},
		{"allow and deny", func(g *Guard) { g.Allow, g.Deny = []string{"host"}, []string{"dc"} }},
		{"small max_memory", func(g *Guard) { g.MaxMemory = minMaxMemory }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var stream []string
			for i := range 400 {
				stream = append(stream, batchText(rng, i))
			}
			text, expanded := replay(t, stream, true, true, tt.set), replay(t, stream, false, true, tt.set)
			uncached := replay(t, stream, true, false, tt.set)
			require.Equal(t, uncached.counters, text.counters)
			require.Equal(t, uncached.keys, text.keys)
			require.True(t, slices.Equal(uncached.out, text.out), "the cache changed the output")
			require.True(t, slices.Equal(expanded.out, text.out), "text and expanded metrics differ")
			// The memory charged may differ by a few bytes between text and expanded
			// metrics, with or without the cache; every other counter is the same.
			delete(expanded.counters, "memory_bytes")
			delete(text.counters, "memory_bytes")
			require.Equal(t, expanded.counters, text.counters)
			require.Positive(t, text.counters["trips"], "the stream trips keys")
			require.Positive(t, text.counters["metrics_changed"]+text.counters["metrics_dropped"])
		})
	}
}

type replayed struct {
	out      []string
	keys     []int // the keys the guard holds after each batch
	counters map[string]int64
}

// replay feeds the batches through a fresh guard whose clock moves on a minute a batch, so
// that the stream passes many slots of the window and calms keys down.
func replay(t *testing.T, stream []string, lines, cache bool, set func(*Guard)) replayed {
	now := t0
	g, _, reg := newGuard(t, func(g *Guard) {
		g.MaxValues, g.Window = 40, morse.Duration(time.Hour)
		g.Now = func() time.Time { return now }
		set(g)
	})
	if !cache {
		g.t.seen = nil // its memory stays charged, so that both guards evict alike
	}
	var r replayed
	for _, b := range stream {
		now = now.Add(time.Minute)
		r.out = append(r.out, testutil.Format(g.Apply(testutil.Parse(t, b, lines))))
		r.keys = append(r.keys, g.t.keys)
	}
	r.counters = map[string]int64{}
	for _, s := range reg.Snapshot() {
		for _, f := range s.Fields {
			r.counters[f.Key] = f.Value
		}
	}
	return r
}

// batchText is batch i of a stream: a few series that repeat (the cache's hits), whose ids
// churn from batch 100 to 199, which trips the id keys, and are calm before and after, so
// that with reset_after the keys return to normal. Every 50th batch and the one after it
// each bring 100 new measurements, more keys than the smallest max_memory holds, so that
// keys are forgotten twice within one slot.
func batchText(rng *rand.Rand, i int) string {
	var b strings.Builder
	for range 20 {
		id := rng.IntN(8)
		if i >= 100 && i < 200 && rng.IntN(4) == 0 {
			id = rng.IntN(200)
		}
		fmt.Fprintf(&b, "m%d,host=h%d,id=i%d,dc=fra v=%di 1\n", rng.IntN(6), rng.IntN(3), id, rng.IntN(5))
	}
	if i%50 == 49 || i%50 == 0 && i > 0 {
		for k := range 100 {
			fmt.Fprintf(&b, "spread%d_%d,host=h%d,id=i%d,dc=fra v=1i 1\n", i, k, k%3, k)
		}
	}
	return b.String()
}

func TestSeriesKey(t *testing.T) {
	for _, tt := range []struct {
		line string
		ok   bool
	}{
		{"cpu,host=a v=1", true},
		{"cpu v=1", true},
		{`cpu,host=a\ b v=1`, false}, // the series goes on past the escaped space
		{" v=1", false},
		{"no-space", false},
	} {
		_, ok := seriesKey(tt.line)
		require.Equal(t, tt.ok, ok, tt.line)
	}
	a, _ := seriesKey("cpu,host=a v=1 1")
	b, _ := seriesKey("cpu,host=a v=2 2")
	c, _ := seriesKey("cpu,host=b v=1 1")
	require.Equal(t, a, b, "the fields and the time are not part of the series")
	require.NotEqual(t, a, c)
}
