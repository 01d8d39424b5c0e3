package morse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTrackingGroupCountsEveryHolder: the group is reported once, when the accumulator and
// every holder have let go, delivered only if no holder dropped a metric; a metric passed on
// after its group was reported no longer counts.
func TestTrackingGroupCountsEveryHolder(t *testing.T) {
	cases := []struct {
		name      string
		delivered []bool // one holder per entry, each settling the whole group
		want      DeliveryInfo
	}{
		{name: "no holder", want: DeliveryInfo{ID: 7, Delivered: true}},
		{name: "two holders write", delivered: []bool{true, true}, want: DeliveryInfo{ID: 7, Delivered: true}},
		{name: "one drops", delivered: []bool{true, false}, want: DeliveryInfo{ID: 7, Delivered: false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []DeliveryInfo
			g := NewTrackingGroup(7, func(d DeliveryInfo) { got = append(got, d) })
			ms := []Metric{NewMetric("m", nil, []Field{{Key: "v", Value: Int(1)}}, time.Unix(1, 0)), NewMetric("n", nil, nil, time.Unix(1, 0))}
			g.Track(ms)
			held := make([][]Metric, len(tc.delivered))
			for i := range held {
				held[i] = append([]Metric(nil), ms...)
				require.Equal(t, 2, RetainTracked(held[i]))
			}
			g.Done()
			g.Done() // twice is once
			for i, ok := range tc.delivered {
				require.Empty(t, got, "holder %d still holds the group", i)
				SettleTracked(held[i], ok)
			}
			require.Equal(t, []DeliveryInfo{tc.want}, got)

			late := append([]Metric(nil), ms...)
			require.Zero(t, RetainTracked(late), "a group reported done takes no more references")
			require.False(t, late[0].Tracked())
			require.True(t, ms[0].WithTags([]Tag{{Key: "a", Value: "b"}}).Tracked(), "copies keep their group")
			line := []Metric{NewLineMetric(LineText{Text: "m v=1i"}, time.Unix(1, 0))}
			g.Track(line)
			require.True(t, line[0].Expanded().Tracked(), "so do expanded line metrics")

			uints := []Metric{NewLineMetric(LineText{Text: "m v=1u", Uints: true}, time.Unix(1, 0))}
			g.Track(uints)
			lt, _ := uints[0].Line()
			require.True(t, lt.Uints && uints[0].Tracked(), "a tracked line metric keeps its unsigned integers")
			lt, _ = uints[0].Untracked().Line()
			require.True(t, lt.Uints && !uints[0].Untracked().Tracked(), "and so does its untracked copy")
		})
	}
}

// BenchmarkRetainSettle measures what a holder such as an output's buffer pays to take and
// give back the references of a batch of 256 metrics: untracked, a listener's batch, which
// is a scan; and tracked by one group, a queue consumer's.
func BenchmarkRetainSettle(b *testing.B) {
	for _, tracked := range []bool{false, true} {
		b.Run(map[bool]string{false: "untracked", true: "tracked"}[tracked], func(b *testing.B) {
			ms := make([]Metric, 256)
			for i := range ms {
				ms[i] = NewLineMetric(LineText{Text: "m v=1i"}, time.Unix(int64(i), 0))
			}
			g := NewTrackingGroup(1, nil) // its own reference keeps it open
			if tracked {
				g.Track(ms)
			}
			want := map[bool]int{false: 0, true: len(ms)}[tracked]
			b.ReportAllocs()
			for b.Loop() {
				if RetainTracked(ms) != want {
					b.Fatal("retained the wrong count")
				}
				SettleTracked(ms, true)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ms)), "ns/metric")
		})
	}
}
