package httpout

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func TestGroups(t *testing.T) {
	m := func(i int) morse.Metric {
		return morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, time.Unix(0, int64(i)))
	}
	var g Groups[string]
	keys := []string{"a", "b", "a", "c", "b", "a"}
	for round := range 3 { // storage is reused from round to round
		g.Reset()
		for i, k := range keys[:len(keys)-round] {
			g.Add(k, m(i))
		}
		got := map[string][]int64{}
		var order []string
		for _, grp := range g.List() {
			order = append(order, grp.Key)
			for _, x := range grp.Metrics {
				v, _ := x.Field("v")
				got[grp.Key] = append(got[grp.Key], v.Int())
			}
		}
		require.Equal(t, []string{"a", "b", "c"}, order, "round %d: in the order keys first appear", round)
		want := map[string][]int64{"a": {0, 2}, "b": {1}, "c": {3}}
		if round < 2 {
			want["b"] = append(want["b"], 4)
		}
		if round < 1 {
			want["a"] = append(want["a"], 5)
		}
		require.Equal(t, want, got, "round %d", round)
	}
	g.Reset()
	require.Empty(t, g.List())
	g.Add("z", m(9))
	require.Len(t, g.List(), 1)
	require.Equal(t, "z", g.List()[0].Key, "a reused group takes its new key: "+strconv.Itoa(len(g.List())))
}

// TestGroupsPositions: runs of one key, a key seen again after others, and positions only.
func TestGroupsPositions(t *testing.T) {
	var g Groups[string]
	for round := range 2 {
		g.Reset()
		for _, k := range []string{"a", "a", "b", "b", "b", "a", "c", "c", "a"} {
			g.AddPosition(k)
		}
		got := map[string][]int{}
		var order []string
		for _, grp := range g.List() {
			order = append(order, grp.Key)
			got[grp.Key] = grp.Positions
			require.Empty(t, grp.Metrics, "positions only")
		}
		require.Equal(t, []string{"a", "b", "c"}, order, "round %d", round)
		require.Equal(t, map[string][]int{"a": {0, 1, 5, 8}, "b": {2, 3, 4}, "c": {6, 7}}, got, "round %d", round)
	}
}

// TestByTag: metrics go to their tag's value, the others (no tag, an empty one) to the
// default, in the batch's order with their positions; no tag name sends all to the default.
func TestByTag(t *testing.T) {
	m := func(tags ...morse.Tag) morse.Metric {
		return morse.NewMetric("m", tags, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(0, 0))
	}
	batch := []morse.Metric{
		m(morse.Tag{Key: "bucket", Value: "a"}),
		m(),
		m(morse.Tag{Key: "bucket", Value: ""}),
		m(morse.Tag{Key: "bucket", Value: "a"}),
		m(morse.Tag{Key: "other", Value: "a"}),
	}
	var g Groups[string]
	got := map[string][]int{}
	var order []string
	for _, grp := range ByTag(&g, batch, "bucket", "def") {
		order = append(order, grp.Key)
		got[grp.Key] = grp.Positions
	}
	require.Equal(t, []string{"a", "def"}, order)
	require.Equal(t, map[string][]int{"a": {0, 3}, "def": {1, 2, 4}}, got)

	groups := ByTag(&g, batch, "", "def")
	require.Len(t, groups, 1, "reset before, and no tag name: one group")
	require.Equal(t, "def", groups[0].Key)
	require.Equal(t, []int{0, 1, 2, 3, 4}, groups[0].Positions)
}
