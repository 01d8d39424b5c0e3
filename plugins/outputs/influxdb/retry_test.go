package influxdb

import (
	"context"
	"errors"
	"net/http"
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
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// spyOutput records the error of every Write of the output it wraps.
type spyOutput struct {
	morse.Output
	mu   sync.Mutex
	errs []error
}

func (s *spyOutput) Write(ctx context.Context, batch []morse.Metric) error {
	err := s.Output.Write(ctx, batch)
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
	return err
}

func (s *spyOutput) failures() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []error
	for _, err := range s.errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// TestCacheFullIsRetried fills a tiny write cache: the server answers 500 "engine:
// cache-max-memory-size exceeded" until it has snapshotted the cache to disk (at most a
// second later, as its snapshot threshold is tiny), and every point arrives exactly once.
func TestCacheFullIsRetried(t *testing.T) {
	t.Parallel()
	const batchSize, batches = 50, 4 // 50 float points take 800 bytes of cache; two do not fit
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{
		CacheMaxMemorySize: "1k",
		Env:                map[string]string{"INFLUXDB_DATA_CACHE_SNAPSHOT_MEMORY_SIZE": "100"},
	})
	spy := &spyOutput{Output: connected(t, in.URL(), "cache")}
	w := batchWriter(t, spy, batch.Options{BatchSize: batchSize, BufferLimit: batchSize * batches})

	var all []morse.Metric
	var times []int64
	for i := range batchSize * batches {
		all = append(all, point("m", int64(i+1), "v", float64(i)+0.25))
		times = append(times, int64(i+1))
	}
	// All at once, so that the flush writes the batches back to back, faster than the server
	// snapshots its cache.
	require.NoError(t, w.WriteBatch(all))
	stats := settled(t, w, int64(len(all)))
	require.Equal(t, int64(len(all)), stats.Written)
	require.Zero(t, stats.Dropped, "%+v", stats.DroppedByReason)

	fails := spy.failures()
	require.NotEmpty(t, fails, "the cache must have been full at least once")
	for _, err := range fails {
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
		var serr *ServerError
		require.ErrorAs(t, err, &serr)
		require.Equal(t, http.StatusInternalServerError, serr.StatusCode)
		require.Contains(t, serr.Message, "engine: cache-max-memory-size exceeded: (")
	}
	require.Equal(t, int64(len(fails)), stats.WriteErrors)
	require.Equal(t, times, storedTimes(t, in, "cache", "m"), "every point, exactly once")
}

// TestAuthErrorsAreRetried checks that 401 and 403 keep the data until an operator fixes the
// credentials or the grants, and that the password never reaches a log or an error.
func TestAuthErrorsAreRetried(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{
		Env: map[string]string{"INFLUXDB_HTTP_AUTH_ENABLED": "true"},
	})
	in.Exec(t, "CREATE USER admin WITH PASSWORD 'admin-secret' WITH ALL PRIVILEGES") // allowed: no user yet
	admin, err := influxquery.NewClient(influxquery.ClientOptions{URL: in.URL(), Username: "admin", Password: "admin-secret", Timeout: 10 * time.Second})
	require.NoError(t, err)
	_, err = admin.Query(testutil.Context(t), "CREATE USER bob WITH PASSWORD 'bob-secret'; CREATE DATABASE authdb")
	require.NoError(t, err)

	var logs testutil.Logs
	logger := logs.Logger()
	output := func(user, password string) *InfluxDB {
		return connected(t, in.URL(), "authdb", func(o *InfluxDB) {
			o.Username, o.Password = user, morse.Secret(password)
			o.SetLogger(logger)
		})
	}
	batch := []morse.Metric{point("m", 1, "v", 1.0), point("m", 2, "v", 2.0)}

	t.Run("wrong password: 401, retried", func(t *testing.T) {
		err := output("bob", "wrong-secret").Write(testutil.Context(t), batch)
		requireStatus(t, err, http.StatusUnauthorized, "authorization failed")
	})
	t.Run("no write privilege: 403, retried until granted", func(t *testing.T) {
		testGrantWhileWaiting(t, output("bob", "bob-secret"), admin, batch)
	})
	t.Run("database creation refused: logged, not fatal", func(t *testing.T) {
		o := New()
		o.URLs, o.Database, o.Username, o.Password = []string{in.URL()}, "bobs_db", "bob", "bob-secret"
		o.SetLogger(logger)
		require.NoError(t, o.Connect(testutil.Context(t)))
		text := logs.String()
		require.Contains(t, text, "database creation failed")
		require.Contains(t, text, "requires admin privilege")
	})

	for _, secret := range []string{"bob-secret", "wrong-secret", "admin-secret"} {
		require.NotContains(t, logs.String(), secret)
	}
}

func requireStatus(t *testing.T, err error, status int, msg string) {
	t.Helper()
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	var serr *ServerError
	require.ErrorAs(t, err, &serr)
	require.Equal(t, status, serr.StatusCode)
	require.Equal(t, msg, serr.Message)
	require.False(t, strings.Contains(err.Error(), "secret"), "no credential in %q", err)
	require.False(t, errors.Is(err, httpout.ErrTooLarge))
}

// testGrantWhileWaiting: a BatchWriter keeps retrying a 403 until the user is granted the
// right to write, and then every point arrives.
func testGrantWhileWaiting(t *testing.T, o *InfluxDB, admin *influxquery.Client, ms []morse.Metric) {
	requireStatus(t, o.Write(testutil.Context(t), ms), http.StatusForbidden, `"bob" user is not authorized to write to database "authdb"`)

	w := batchWriter(t, o, batch.Options{BatchSize: len(ms)})
	require.NoError(t, w.WriteBatch(ms))
	require.Eventually(t, func() bool { return w.Stats().WriteErrors >= 2 }, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, w.Stats().Written)

	_, err := admin.Query(testutil.Context(t), "GRANT WRITE ON authdb TO bob")
	require.NoError(t, err)
	stats := settled(t, w, int64(len(ms)))
	require.Equal(t, int64(len(ms)), stats.Written)
	require.Zero(t, stats.Dropped)

	resp, err := admin.Query(testutil.Context(t), "SELECT count(v) FROM m", influxquery.WithDatabase("authdb"))
	require.NoError(t, err)
	require.Equal(t, int64(2), resp.Results[0].Series[0].Values[0][1])
}
