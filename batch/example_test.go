package batch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/plugins/outputs/file"
)

// ExampleWriter embeds the batching writer with the file output printing to stdout. With
// the InfluxDB output (plugins/outputs/influxdb) built in code instead, it is influxdb-java's
// BatchOptions in Go.
func ExampleWriter() {
	out := file.New() // writes line protocol to stdout
	w, err := batch.NewWriter(out, batch.Options{
		BatchSize: 1000, FlushInterval: time.Second, FlushJitter: 200 * time.Millisecond,
		BufferLimit: 10000,
		OnDrop: func(ev batch.DropEvent) { // every loss, exactly
			fmt.Fprintf(os.Stderr, "dropped %d (%s): %v\n", ev.Count, ev.Reason, ev.Err)
		},
	})
	if err != nil {
		panic(err)
	}
	m := morse.NewMetric("requests",
		[]morse.Tag{{Key: "path", Value: "/api"}},
		[]morse.Field{{Key: "count", Value: morse.Int(1)}, {Key: "latency", Value: morse.Float(0.012)}},
		time.Unix(1700000000, 0))
	if err := w.Write(m); err != nil { // never blocks on the network
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil { // flushes what is left within ctx's deadline
		panic(err)
	}
	fmt.Println("written:", w.Stats().Written)
	// Output:
	// requests,path=/api count=1i,latency=0.012 1700000000000000000
	// written: 1
}

// pickyOutput stores the metrics whose value is positive and refuses the others for good,
// as a sink that validates each point does.
type pickyOutput struct{}

func (pickyOutput) Connect(context.Context) error { return nil }
func (pickyOutput) Close() error                  { return nil }

func (pickyOutput) Write(_ context.Context, batch []morse.Metric) error {
	var refused []int
	for i, m := range batch {
		if v, _ := m.Field("value"); v.Int() <= 0 {
			refused = append(refused, i)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	// Indices say which metrics were refused; a sink that knows only how many sets Dropped.
	return &morse.PartialWriteError{Dropped: len(refused), Indices: refused,
		Reason: morse.ReasonUnableToParse, Err: errors.New("value must be positive")}
}

// ExampleDropEvent handles a partial write: the sink stored some metrics of a batch and
// refused the rest for good. The refused ones reach OnDrop with the sink's reason, are
// counted as dropped and are never retried; the rest count as written.
func ExampleDropEvent() {
	w, err := batch.NewWriter(pickyOutput{}, batch.Options{
		OnDrop: func(ev batch.DropEvent) {
			var pw *morse.PartialWriteError
			if errors.As(ev.Err, &pw) { // a partial write: the rest of the batch was stored
				fmt.Printf("sink refused %d of the batch: %v\n", pw.Dropped, pw.Err)
			}
			for _, m := range ev.Metrics { // exactly the refused ones, since the sink said which
				fmt.Printf("dropped %s (%s)\n", m.Name(), ev.Reason)
			}
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	for i, v := range []int64{3, -1, 7} {
		_ = w.Write(morse.NewMetric(fmt.Sprintf("m%d", i), nil,
			[]morse.Field{{Key: "value", Value: morse.Int(v)}}, time.Unix(1700000000, 0)))
	}
	if err := w.Close(context.Background()); err != nil { // flushes the batch
		panic(err)
	}
	st := w.Stats()
	fmt.Println("written:", st.Written, "dropped:", st.Dropped)
	// Output:
	// sink refused 1 of the batch: value must be positive
	// dropped m1 (unable_to_parse)
	// written: 2 dropped: 1
}
