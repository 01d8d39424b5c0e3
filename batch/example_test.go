package batch_test

import (
	"context"
	"fmt"
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
