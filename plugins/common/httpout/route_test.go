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
