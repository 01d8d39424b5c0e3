package influxdb_test

import (
	"context"
	"log"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
)

// Example_batchWriter embeds the batching writer in a program, with the InfluxDB output built
// in code: influxdb-java's BatchOptions, in Go. Write never blocks on the network; Close
// flushes what is left within its context's deadline. TestExampleBatchWriter runs the same
// against a real InfluxDB.
func Example_batchWriter() {
	out := influxdb.New()
	out.URLs = []string{"http://127.0.0.1:8086"}
	out.Database = "app"
	w, err := batch.NewWriter(out, batch.Options{ // validates and initialises out
		BatchSize: 1000, FlushInterval: time.Second, FlushJitter: 200 * time.Millisecond,
		BufferLimit: 10000,
		OnDrop: func(ev batch.DropEvent) { // every loss, exactly, with its reason
			log.Printf("lost %d metrics (%s): %v", ev.Count, ev.Reason, ev.Err)
		},
	})
	if err != nil {
		log.Fatal(err) // a bad option, or an output config its Validate refused
	}
	_ = w.Write(morse.NewMetric("requests",
		[]morse.Tag{{Key: "path", Value: "/api"}},
		[]morse.Field{{Key: "latency", Value: morse.Float(0.012)}}, time.Now()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		log.Print(err) // *batch.UnsentError names what was left
	}
}
