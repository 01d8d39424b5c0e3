package morse_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/outputs/file"
)

// ExampleBatchWriter embeds the batching writer with the file output printing to stdout.
func ExampleBatchWriter() {
	out := file.New() // writes line protocol to stdout
	w, err := morse.NewBatchWriter(out, morse.BatchOptions{
		BatchSize: 1000, FlushInterval: time.Second, FlushJitter: 200 * time.Millisecond,
		BufferLimit: 10000,
		OnDrop: func(batch []morse.Metric, err error) {
			fmt.Fprintf(os.Stderr, "dropped %d: %v\n", len(batch), err)
		},
	})
	if err != nil {
		panic(err)
	}
	m := morse.NewMetric("requests",
		[]morse.Tag{{Key: "path", Value: "/api"}},
		[]morse.Field{{Key: "count", Value: morse.Int(1)}, {Key: "latency", Value: morse.Float(0.012)}},
		time.Unix(1700000000, 0))
	if err := w.Write(m); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil { // flushes what is left
		panic(err)
	}
	fmt.Println("written:", w.Stats().Written)
	// Output:
	// requests,path=/api count=1i,latency=0.012 1700000000000000000
	// written: 1
}

// staticInput is a tiny input plugin defined in code.
type staticInput struct{}

func (staticInput) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("demo", map[string]any{"value": 42}, map[string]string{"kind": "static"}, time.Unix(1700000000, 0))
	return nil
}

// ExampleAgent builds a whole agent in code and runs it once.
func ExampleAgent() {
	cfg := morse.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.GlobalTags["dc"] = "eu-1"
	cfg.AddInput("static", staticInput{})
	cfg.AddOutput("file", file.New())
	agent, err := morse.NewAgent(cfg, morse.AgentOptions{})
	if err != nil {
		panic(err)
	}
	if err := agent.Once(context.Background()); err != nil { // gather, flush, close
		panic(err)
	}
	// Output:
	// demo,dc=eu-1,kind=static value=42i 1700000000000000000
}
