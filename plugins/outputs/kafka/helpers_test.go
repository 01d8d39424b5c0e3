package kafka

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	influxparser "github.com/morse-agent/morse/plugins/parsers/influx"
	jsonparser "github.com/morse-agent/morse/plugins/parsers/metricjson"
	msgpackparser "github.com/morse-agent/morse/plugins/parsers/msgpack"
)

// logWriter sends the output's log to the test's.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// connect builds an output for the broker at addr, idempotent with all acks unless edit
// says otherwise, and connects it. The metadata may be refreshed every 100 ms, so that a
// topic created a moment ago is found at once.
func connect(t testing.TB, addr string, edit func(*Kafka)) *Kafka {
	t.Helper()
	k := New()
	k.Brokers = []string{addr}
	k.IdempotentWrites = true
	k.Timeout = morse.Duration(10 * time.Second)
	k.MetadataMinAge = 100 * time.Millisecond
	if edit != nil {
		edit(k)
	}
	k.SetLogger(slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, k.Validate())
	require.NoError(t, k.Init())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, k.Connect(ctx))
	t.Cleanup(func() { require.NoError(t, k.Close()) })
	return k
}

// write writes batch once, with a bound on the time.
func write(t testing.TB, k *Kafka, batch []morse.Metric) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return k.Write(ctx, batch)
}

// writeUntilSettled writes batch as the agent would: again after each retryable error,
// until the write succeeds or is settled for good, within a bound. It returns how many
// attempts it took and the last result.
func writeUntilSettled(t testing.TB, k *Kafka, batch []morse.Metric, pause time.Duration) (int, error) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for attempt := 1; ; attempt++ {
		err := write(t, k, batch)
		if morse.Classify(err) != morse.OutcomeRetry {
			return attempt, err
		}
		require.True(t, time.Now().Before(deadline), "still failing after 3 minutes: %v", err)
		select {
		case <-time.After(pause): // the agent's backoff, shortened
		case <-t.Context().Done():
			t.Fatal("test ended")
		}
	}
}

// parsers read a record's value back in each format.
var parsers = map[string]func([]byte, func(morse.Metric)) (int, error){
	"influx": func(b []byte, emit func(morse.Metric)) (int, error) {
		res := (&influxparser.Parser{}).Parse(b, emit)
		return res.Metrics, res.Err()
	},
	"json":    (&jsonparser.Parser{TimestampUnits: time.Nanosecond}).Parse,
	"msgpack": (&msgpackparser.Parser{}).Parse,
}

// decode parses every record's value in format and fails the test on a value that is not
// exactly one metric.
func decode(t testing.TB, format string, recs []*kgo.Record) []testutil.Point {
	t.Helper()
	var out []testutil.Point
	for _, r := range recs {
		n, err := parsers[format](r.Value, func(m morse.Metric) { out = append(out, testutil.ToPoint(m)) })
		require.NoError(t, err, "%q", r.Value)
		require.Equal(t, 1, n, "%q", r.Value)
	}
	return out
}

// startKafka starts a broker for one test, logging how long it took.
func startKafka(t *testing.T, opts testserver.KafkaOptions) *testserver.Kafka {
	t.Helper()
	k := testserver.StartKafka(t, opts)
	t.Logf("kafka %s ready in %s (jars downloaded: %v)", k.Addr(), k.Startup, k.Fetched)
	return k
}
