package influxdblistener

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// batchRecorder is an accumulator that takes batches and records their sizes.
type batchRecorder struct {
	testutil.Accumulator
	mu    sync.Mutex
	sizes []int
}

func (b *batchRecorder) AddMetrics(ms []morse.Metric) {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(ms))
	b.mu.Unlock()
	for _, m := range ms {
		b.AddMetric(m)
	}
}

// TestAWriteIsHandedOverInBatches: the metrics of a write reach an accumulator that takes
// batches in hand-overs of metricBatchSize, the last one partial, all of them before the
// write is answered, in order, whichever way the body is parsed.
func TestAWriteIsHandedOverInBatches(t *testing.T) {
	cases := []struct {
		name string
		opt  func(*InfluxDBListener)
	}{
		{"whole body", func(*InfluxDBListener) {}},
		{"streamed, max_line_size", func(l *InfluxDBListener) { l.MaxLineSize = 1024 }},
		{"database tag", func(l *InfluxDBListener) { l.DatabaseTag = "db" }},
	}
	const lines = 2*metricBatchSize + 7
	var body strings.Builder
	for i := range lines {
		fmt.Fprintf(&body, "m,i=%d v=%di %d\n", i, i, i+1)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newListener(t, tc.opt)
			rec := &batchRecorder{}
			require.NoError(t, l.Start(context.Background(), rec))
			t.Cleanup(l.Stop)
			c := newClient(t, l.Addr(), nil)
			a := c.must("POST", "/write?db=x", []byte(body.String()))
			require.Equal(t, http.StatusNoContent, a.status, a.body)

			rec.mu.Lock()
			sizes := rec.sizes
			rec.mu.Unlock()
			require.Equal(t, []int{metricBatchSize, metricBatchSize, 7}, sizes)
			ms := rec.Metrics()
			require.Len(t, ms, lines)
			for i, m := range ms {
				require.Equal(t, int64(i+1), m.Time().UnixNano(), "metric %d", i)
			}
		})
	}
}
