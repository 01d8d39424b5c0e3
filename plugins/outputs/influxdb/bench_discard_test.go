package influxdb

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/morse-agent/morse"
)

// BenchmarkWriteDiscard measures the output's own cost per line, serialization and HTTP
// included, against a server that answers at once, so that the server is never the limit.
func BenchmarkWriteDiscard(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	o := New()
	o.URLs = []string{srv.URL}
	o.SkipDatabaseCreation = true
	if err := o.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	batch := make([]morse.Metric, 1000)
	for i := range batch {
		batch[i] = morse.NewMetric("cpu", []morse.Tag{{Key: "host", Value: "h" + strconv.Itoa(i%50)}, {Key: "region", Value: "eu"}, {Key: "dc", Value: "a"}},
			[]morse.Field{{Key: "usage", Value: morse.Float(1.5)}, {Key: "n", Value: morse.Int(3)}, {Key: "s", Value: morse.String("ok")}}, time.Unix(0, int64(i)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := o.Write(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "lines/s")
}
