package batch

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestWriterSettlesTrackedMetrics: a tracked metric's group learns of its end however it
// leaves the writer: written, refused, evicted, left at shutdown or refused after Close.
func TestWriterSettlesTrackedMetrics(t *testing.T) {
	permanent := func(int, []morse.Metric) error { return morse.Permanent(morse.ReasonPermanent, errors.New("no")) }
	down := func(int, []morse.Metric) error { return errors.New("connection refused") }
	cases := []struct {
		name   string
		answer func(int, []morse.Metric) error
		limit  int  // buffer limit
		add    int  // untracked metrics added after the tracked one
		closed bool // the tracked metric arrives after Close
		want   bool // Delivered
		at     int  // when the group is reported: 0 as it is added, 1 at the flush, 2 at Close
	}{
		{name: "written", want: true, at: 1},
		{name: "refused for good", answer: permanent, at: 1},
		{name: "evicted", answer: down, limit: 2, add: 2, at: 0},
		{name: "left at shutdown", answer: down, at: 2},
		{name: "after close", closed: true, at: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runSettleCase(t, tc.answer, tc.limit, tc.add, tc.closed, tc.want, tc.at) })
		})
	}
}

// runSettleCase writes one tracked metric (after Close when closed), then add untracked
// ones, and checks that its group is reported with want at step at: 0 as it is added, 1 at
// the first flush, 2 at Close.
func runSettleCase(t *testing.T, answer func(int, []morse.Metric) error, limit, add int, closed, want bool, at int) {
	var mu sync.Mutex
	var got []morse.DeliveryInfo
	out := &testutil.ScriptOutput{Answer: answer}
	batch := 2
	if limit > 0 {
		// Above the limit, so that no full batch starts a flush: the flush loop would
		// otherwise race the writes for the tracked metric, and take it into flight
		// before the writes after it could evict it.
		batch = limit + 1
	}
	w, err := NewWriter(out, Options{Name: "t", BatchSize: batch, BufferLimit: cmp.Or(limit, 10),
		FlushInterval: time.Second, Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	g := morse.NewTrackingGroup(1, func(d morse.DeliveryInfo) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	})
	ms := []morse.Metric{morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(1, 0))}
	g.Track(ms)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if closed {
		_ = w.Close(ctx)
	}
	_ = w.Write(ms[0])
	for range add {
		_ = w.Write(morse.NewMetric("n", nil, []morse.Field{{Key: "v", Value: morse.Int(2)}}, time.Unix(1, 0)))
	}
	g.Done()
	check := func(step int) {
		mu.Lock()
		defer mu.Unlock()
		if step >= at {
			require.Equal(t, []morse.DeliveryInfo{{ID: 1, Delivered: want}}, got, "step %d", step)
		} else {
			require.Empty(t, got, "step %d", step)
		}
	}
	check(0)
	time.Sleep(1500 * time.Millisecond) // one flush
	check(1)
	_ = w.Close(ctx)
	check(2)
}

// TestWriterSettlesAPartialWrite: of a partial write that names the metrics it dropped, the
// groups of the others are delivered; when it only counts them, no group is.
func TestWriterSettlesAPartialWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		indices []int
		want    []morse.DeliveryInfo
	}{
		{name: "positions named", indices: []int{1}, want: []morse.DeliveryInfo{{ID: 1, Delivered: true}, {ID: 2, Delivered: false}}},
		{name: "only counted", want: []morse.DeliveryInfo{{ID: 1, Delivered: false}, {ID: 2, Delivered: false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var got []morse.DeliveryInfo
				out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
					return &morse.PartialWriteError{Dropped: 1, Indices: tc.indices, Reason: morse.ReasonFieldTypeConflict, Err: errors.New("507")}
				}}
				w, err := NewWriter(out, Options{Name: "t", BatchSize: 2, FlushInterval: time.Second, Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				for id := range 2 {
					g := morse.NewTrackingGroup(morse.TrackingID(id+1), func(d morse.DeliveryInfo) {
						mu.Lock()
						got = append(got, d)
						mu.Unlock()
					})
					ms := []morse.Metric{morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(int64(id))}}, time.Unix(1, 0))}
					g.Track(ms)
					require.NoError(t, w.Write(ms[0]))
					g.Done()
				}
				time.Sleep(1500 * time.Millisecond) // one flush
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = w.Close(ctx)
				mu.Lock()
				defer mu.Unlock()
				require.ElementsMatch(t, tc.want, got)
			})
		})
	}
}

// BenchmarkWriterWriteBatch measures WriteBatch of 256 metrics from one goroutine with the
// default options, untracked (a listener's batch) and tracked by one group (a queue
// consumer's), while the flush goroutine drains full batches concurrently.
func BenchmarkWriterWriteBatch(b *testing.B) {
	for _, tracked := range []bool{false, true} {
		b.Run(map[bool]string{false: "untracked", true: "tracked"}[tracked], func(b *testing.B) {
			w, err := NewWriter(&testutil.DiscardOutput{}, Options{Logger: testutil.QuietLogger()})
			require.NoError(b, err)
			ms := testutil.SeqMetrics(0, 256)
			g := morse.NewTrackingGroup(1, nil) // its own reference keeps it open
			if tracked {
				g.Track(ms)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = w.WriteBatch(ms)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ms)), "ns/metric")
			b.StopTimer()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = w.Close(ctx)
		})
	}
}
