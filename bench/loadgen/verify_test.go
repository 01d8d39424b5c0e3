package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// fakeInflux stores the points written to it and answers the verifier's count queries from
// them, the way InfluxDB would: a point counts when it has the field and its time is in the
// window.
type fakeInflux struct {
	mu     sync.Mutex
	points []morse.Metric
	drop   int // how many of the first points written to lose
	err    string
}

var countRE = regexp.MustCompile(`^SELECT count\("([^"]+)"\) FROM "([^"]+)" WHERE time >= (\d+) AND time <= (\d+)$`)

func (f *fakeInflux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/write":
		body, _ := io.ReadAll(r.Body)
		var p influx.Parser
		f.mu.Lock()
		p.Parse(body, func(m morse.Metric) {
			if f.drop > 0 {
				f.drop--
				return
			}
			f.points = append(f.points, m)
		})
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case "/query":
		f.query(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeInflux) query(w http.ResponseWriter, r *http.Request) {
	if f.err != "" {
		_, _ = fmt.Fprintf(w, `{"results":[{"statement_id":0,"error":%q}]}`, f.err)
		return
	}
	type result struct {
		ID     int   `json:"statement_id"`
		Series []any `json:"series,omitempty"`
	}
	var results []result
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, stmt := range strings.Split(r.FormValue("q"), "; ") {
		m := countRE.FindStringSubmatch(stmt)
		if m == nil {
			http.Error(w, "bad query "+stmt, http.StatusBadRequest)
			return
		}
		from, _ := strconv.ParseInt(m[3], 10, 64)
		to, _ := strconv.ParseInt(m[4], 10, 64)
		n := 0
		for _, p := range f.points {
			_, has := p.Field(m[1])
			if ts := p.Time().UnixNano(); p.Name() == m[2] && has && ts >= from && ts <= to {
				n++
			}
		}
		res := result{ID: i}
		if n > 0 {
			res.Series = []any{map[string]any{"name": m[2], "columns": []string{"time", "count"}, "values": [][]any{{0, n}}}}
		}
		results = append(results, res)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
}

func startFakeInflux(t *testing.T, f *fakeInflux) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// sendAndVerify sends lines lines to a fake InfluxDB and verifies them on a fake clock.
func sendAndVerify(t *testing.T, f *fakeInflux, lines int64) (Report, VerifyResult, time.Duration) {
	t.Helper()
	addr := startFakeInflux(t, f)
	pool := testPool(t)
	cfg := Config{Transport: "http", Addr: addr, Path: "/write?db=bench", Connections: 2,
		LinesPerRequest: 500, Lines: lines}
	require.NoError(t, cfg.Validate())
	rep, err := Run(context.Background(), cfg, pool)
	require.NoError(t, err)
	clock := newFakeClock()
	start := clock.Now()
	res, err := Verify(context.Background(), VerifyConfig{URL: "http://" + addr, DB: "bench", Clock: clock},
		pool.Measurements(), rep.FirstTS, rep.LastTS, rep.Lines)
	require.NoError(t, err)
	return rep, res, clock.Now().Sub(start)
}

func TestVerifyCountsEveryLineOfTheRun(t *testing.T) {
	f := &fakeInflux{}
	// Points of an earlier run, outside this run's time window, must not be counted.
	f.points = append(f.points, morse.NewMetric("cpu", nil, []morse.Field{{Key: "usage_user", Value: morse.Float(1)}}, time.Unix(1, 0)))
	rep, res, waited := sendAndVerify(t, f, 5000)
	require.Equal(t, int64(5000), rep.Lines)
	require.Equal(t, VerifyResult{Sent: 5000, Arrived: 5000, Percent: 100, Settled: true}, res)
	require.Zero(t, waited, "the first count was complete")
}

func TestVerifyWaitsForTheCountToSettle(t *testing.T) {
	_, res, waited := sendAndVerify(t, &fakeInflux{drop: 7}, 4000)
	require.Equal(t, int64(3993), res.Arrived)
	require.True(t, res.Settled)
	require.InDelta(t, 99.825, res.Percent, 1e-9)
	require.Equal(t, 3*time.Second, waited, "the default settle time on the fake clock")
}

func TestVerifyGivesUpAfterTheWait(t *testing.T) {
	_, res, waited := sendAndVerify(t, &fakeInflux{drop: 1 << 30}, 100)
	require.Zero(t, res.Arrived)
	require.False(t, res.Settled)
	require.Equal(t, 30*time.Second, waited)
}

func TestVerifyReportsQueryErrors(t *testing.T) {
	addr := startFakeInflux(t, &fakeInflux{err: "database not found: bench"})
	_, err := Verify(context.Background(), VerifyConfig{URL: "http://" + addr, DB: "bench"},
		[]CountedMeasurement{{Name: "cpu", Field: "usage_user"}}, 0, 1, 1)
	require.ErrorContains(t, err, "database not found")
}

func TestVerifyRefusesRemoteURLs(t *testing.T) {
	_, err := Verify(context.Background(), VerifyConfig{URL: "http://10.0.0.1:8086", DB: "x"}, nil, 0, 1, 1)
	require.Error(t, err)
}

func TestCountQueryQuotesIdentifiers(t *testing.T) {
	q := countQuery([]CountedMeasurement{{Name: "app events", Field: "value"}, {Name: `a"b`, Field: `c\d`}}, 5, 9)
	require.Equal(t, `SELECT count("value") FROM "app events" WHERE time >= 5 AND time <= 9; `+
		`SELECT count("c\\d") FROM "a\"b" WHERE time >= 5 AND time <= 9`, q)
}
