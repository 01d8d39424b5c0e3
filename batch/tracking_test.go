package batch

import (
	"context"
	"errors"
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
	}{
		{name: "written", want: true},
		{name: "refused for good", answer: permanent},
		{name: "evicted", answer: down, limit: 2, add: 2},
		{name: "left at shutdown", answer: down},
		{name: "after close", closed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got []morse.DeliveryInfo
				out := &testutil.ScriptOutput{Answer: tc.answer}
				w, err := NewWriter(out, Options{Name: "t", BatchSize: 2, BufferLimit: max(tc.limit, 10),
					FlushInterval: time.Second, Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				g := morse.NewTrackingGroup(1, func(d morse.DeliveryInfo) { got = append(got, d) })
				ms := []morse.Metric{morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(1, 0))}
				g.Track(ms)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if tc.closed {
					_ = w.Close(ctx)
				}
				_ = w.Write(ms[0])
				for range tc.add {
					_ = w.Write(morse.NewMetric("n", nil, []morse.Field{{Key: "v", Value: morse.Int(2)}}, time.Unix(1, 0)))
				}
				g.Done()
				time.Sleep(1500 * time.Millisecond) // one flush
				_ = w.Close(ctx)
				require.Equal(t, []morse.DeliveryInfo{{ID: 1, Delivered: tc.want}}, got)
			})
		})
	}
}
