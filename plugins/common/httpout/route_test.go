package httpout

import (
	"errors"
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

// TestGroupsViews: a group whose positions are one run is a subslice of the batch, which a
// write cannot append into; a group seen again after others is a copy; g keeps no metric.
func TestGroupsViews(t *testing.T) {
	batch := make([]morse.Metric, 7)
	for i := range batch {
		batch[i] = morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, time.Unix(0, int64(i)))
	}
	var g Groups[string]
	for _, k := range []string{"a", "a", "b", "b", "b", "c", "a"} {
		g.AddPosition(k)
	}
	views := g.Views(batch)
	require.Len(t, views, 3)
	values := func(ms []morse.Metric) (out []int64) {
		for _, m := range ms {
			v, _ := m.Field("v")
			out = append(out, v.Int())
		}
		return out
	}
	require.Equal(t, []int64{0, 1, 6}, values(views[0].Metrics), "a key seen again is gathered")
	require.Equal(t, []int{0, 1, 6}, views[0].Positions)
	require.Equal(t, []int64{2, 3, 4}, values(views[1].Metrics))
	require.Same(t, &batch[2], &views[1].Metrics[0], "one run is the batch's own slots")
	require.Equal(t, 3, cap(views[1].Metrics), "and cannot be appended into")
	require.Equal(t, []int64{5}, values(views[2].Metrics))
	for _, grp := range g.List() {
		require.Empty(t, grp.Metrics, "g keeps positions only")
	}
}

// TestSplit: by TagOr, metrics go to their tag's value, the others (no tag, an empty one)
// to the default, each group written once in the order its key first appears, with the
// batch's metrics in order; a group refused as a whole counts exactly its metrics; no
// metric is kept once Split returns.
func TestSplit(t *testing.T) {
	m := func(i int, tags ...morse.Tag) morse.Metric {
		return morse.NewMetric("m", tags, []morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, time.Unix(0, 0))
	}
	batch := []morse.Metric{
		m(0, morse.Tag{Key: "bucket", Value: "a"}),
		m(1),
		m(2, morse.Tag{Key: "bucket", Value: ""}),
		m(3, morse.Tag{Key: "bucket", Value: "a"}),
		m(4, morse.Tag{Key: "other", Value: "a"}),
	}
	var g Groups[string]
	split := func(tag string, refuse string) (map[string][]int64, []string, error) {
		got := map[string][]int64{}
		var order []string
		err := Split(&g, batch, func(m morse.Metric) string { return TagOr(m, tag, "def") }, func(key string, ms []morse.Metric) error {
			order = append(order, key)
			for _, x := range ms {
				v, _ := x.Field("v")
				got[key] = append(got[key], v.Int())
			}
			if key == refuse {
				return morse.Permanent(morse.ReasonDatabaseNotFound, errors.New("not found"))
			}
			return nil
		})
		require.Empty(t, g.List(), "emptied before Split returns")
		return got, order, err
	}
	got, order, err := split("bucket", "")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "def"}, order)
	require.Equal(t, map[string][]int64{"a": {0, 3}, "def": {1, 2, 4}}, got)

	got, order, err = split("", "")
	require.NoError(t, err)
	require.Equal(t, []string{"def"}, order, "no tag name: one group")
	require.Equal(t, map[string][]int64{"def": {0, 1, 2, 3, 4}}, got)

	_, _, err = split("bucket", "def")
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, []int{1, 2, 4}, pw.Indices, "the refused group's metrics, at their positions in the batch")
	require.Equal(t, morse.ReasonDatabaseNotFound, pw.Reason)
}
