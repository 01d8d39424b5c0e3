package cardinality

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestKeptTags: the tags a converted metric keeps are a clipped window on its own slice
// while they are a run, and a copy otherwise; either way the kept tags, in order.
func TestKeptTags(t *testing.T) {
	tags := []morse.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}, {Key: "c", Value: "3"}, {Key: "d", Value: "4"}}
	tests := []struct {
		name   string
		keep   []int
		window bool // a window on tags, not a copy
	}{
		{"none kept", nil, false},
		{"last dropped", []int{0, 1, 2}, true},
		{"first dropped", []int{1, 2, 3}, true},
		{"both ends dropped", []int{1, 2}, true},
		{"one kept", []int{2}, true},
		{"a gap", []int{0, 2, 3}, false},
		{"two gaps", []int{0, 2}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k keptTags
			var want []morse.Tag
			for _, i := range tc.keep {
				k.keep(tags, i)
				want = append(want, tags[i])
			}
			got := k.slice(tags)
			require.Equal(t, want, got)
			if len(got) > 0 {
				require.Equal(t, tc.window, &got[0] == &tags[tc.keep[0]], "a window on the metric's own tags")
			}
			if tc.window {
				require.Equal(t, len(got), cap(got), "clipped: an append makes a copy")
			}
		})
	}
}

// TestConvertingAllocatesOnlyFields: a metric whose tripped key is at either end of its
// tags costs one allocation, its new fields.
func TestConvertingAllocatesOnlyFields(t *testing.T) {
	g, _, _ := newGuard(t, func(g *Guard) { g.MaxValues = 1 })
	g.Apply([]morse.Metric{metric("m", "aid", "t1", "host", "a", "id", "t1"), metric("m", "aid", "t2", "host", "a", "id", "t2")})
	buf := make([]morse.Metric, 1)
	for _, in := range []morse.Metric{
		metric("m", "host", "a", "id", "x"),  // the tripped key last
		metric("m", "aid", "x", "host", "a"), // and first
	} {
		copy(buf, []morse.Metric{in})
		g.Apply(buf)
		require.Equal(t, []morse.Tag{{Key: "host", Value: "a"}}, buf[0].Tags())
		require.Len(t, buf[0].Fields(), 2)
		allocs := testing.AllocsPerRun(100, func() {
			buf[0] = in
			g.Apply(buf)
		})
		require.Equal(t, 1.0, allocs, in.Tags())
	}
}
