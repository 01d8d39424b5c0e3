package influxdb

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// connected returns an output for url, changed by mods, after Connect.
func connected(t testing.TB, url, db string, mods ...func(*InfluxDB)) *InfluxDB {
	t.Helper()
	o := New()
	o.URLs = []string{url}
	o.Database = db
	for _, m := range mods {
		m(o)
	}
	require.NoError(t, o.Validate())
	require.NoError(t, o.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// point builds a metric of measurement name at nanosecond ts with fields given as
// key, value pairs.
func point(name string, ts int64, kv ...any) morse.Metric {
	var fields []morse.Field
	var tags []morse.Tag
	for i := 0; i < len(kv); i += 2 {
		key := kv[i].(string)
		if tag, ok := strings.CutPrefix(key, "#"); ok {
			tags = append(tags, morse.Tag{Key: tag, Value: kv[i+1].(string)})
			continue
		}
		v, ok := morse.ValueOf(kv[i+1])
		if !ok {
			panic(fmt.Sprintf("point: unsupported value %T", kv[i+1]))
		}
		fields = append(fields, morse.Field{Key: key, Value: v})
	}
	return morse.NewMetric(name, tags, fields, time.Unix(0, ts))
}

// storedTimes returns the times (ns) of the points of measurement m in db, in order.
func storedTimes(t testing.TB, in *testserver.Influx, db, m string) []int64 {
	t.Helper()
	res := in.Query(t, db, "SELECT * FROM "+influxquery.QuoteIdent(m))
	require.Len(t, res, 1)
	if len(res[0].Series) == 0 {
		return nil
	}
	var out []int64
	for _, row := range res[0].Series[0].Values {
		n, ok := row[0].(int64)
		require.True(t, ok, "time %v is an integer (epoch=ns)", row[0])
		out = append(out, n)
	}
	return out
}

// dropRecorder collects what a batch writer's OnDrop receives. An event's metrics may be
// reused after the call, so it keeps copies.
type dropRecorder struct {
	mu     sync.Mutex
	events []batch.DropEvent
}

func (r *dropRecorder) onDrop(ev batch.DropEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Metrics = append([]morse.Metric(nil), ev.Metrics...)
	r.events = append(r.events, ev)
}

func (r *dropRecorder) get() []batch.DropEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]batch.DropEvent(nil), r.events...)
}

// requireDropEvent checks that a writer reported one loss of n metrics out of sent: the whole
// batch for a permanent error; for a partial write, the count the server gave, with the batch
// they were among, marked partial.
func requireDropEvent(t *testing.T, events []batch.DropEvent, sent []morse.Metric, n int, outcome morse.WriteOutcome) {
	t.Helper()
	require.Len(t, events, 1, "OnDrop is called once for the batch")
	require.Equal(t, n, events[0].Count, "the lost count is exact")
	switch {
	case outcome == morse.OutcomePartial && !events[0].Partial:
		// The output knew which it dropped (a split batch): exactly those.
		require.Len(t, events[0].Metrics, n)
		require.Subset(t, sent, events[0].Metrics)
	default:
		require.Equal(t, sent, events[0].Metrics)
		require.Equal(t, outcome == morse.OutcomePartial, events[0].Partial)
	}
	var pe *morse.PermanentError
	require.ErrorAs(t, events[0].Err, &pe, "a partial write is found as permanent too")
}

// settled waits until the writer has accounted for n metrics, written or dropped.
func settled(t testing.TB, w *batch.Writer, n int64) batch.Stats {
	t.Helper()
	require.Eventually(t, func() bool {
		s := w.Stats()
		return s.Written+s.Dropped >= n
	}, 20*time.Second, 10*time.Millisecond, "the writer never settled %d metrics: %+v", n, w.Stats())
	return w.Stats()
}

// batchWriter returns a writer that flushes fast and retries fast, closed at the end.
func batchWriter(t testing.TB, out morse.Output, opts batch.Options) *batch.Writer {
	t.Helper()
	if opts.FlushInterval == 0 {
		opts.FlushInterval = 20 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler) // the tests check the counters instead
	}
	if opts.RetryInitial == 0 {
		opts.RetryInitial, opts.RetryMax = 50*time.Millisecond, 200*time.Millisecond
	}
	w, err := batch.NewWriter(out, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	return w
}
