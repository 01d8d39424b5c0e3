package morse_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
)

// stdoutOutput is a custom output: it prints each metric's name and value. A real one would
// open its connection in Connect, reconnect within Write when the connection breaks, and
// release it in Close; Connect may come again after Close (see Output).
type stdoutOutput struct{ connected bool }

func (o *stdoutOutput) Connect(context.Context) error {
	o.connected = true
	return nil
}

func (o *stdoutOutput) Write(_ context.Context, batch []morse.Metric) error {
	if !o.connected {
		return morse.Retryable(fmt.Errorf("not connected"), 0) // never happens: see Output
	}
	for _, m := range batch {
		v, _ := m.Field("value")
		fmt.Printf("%s value=%d\n", m.Name(), v.Int())
	}
	return nil
}

func (o *stdoutOutput) Close() error {
	o.connected = false
	return nil
}

// gaugeInput is a custom input that gathers one metric.
type gaugeInput struct{}

func (gaugeInput) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("demo", map[string]any{"value": 42}, nil, time.Unix(1700000000, 0))
	return nil
}

// ExampleOutput runs a custom output in an agent built in code. Its settings are its Common
// options, as the keys of [[outputs.NAME]] in a file.
func ExampleOutput() {
	cfg := config.DefaultConfig()
	cfg.AddInput("gauge", gaugeInput{})
	oc := cfg.AddOutput("stdout", &stdoutOutput{})
	oc.Common.MetricBatchSize = 100
	a, err := agent.NewAgent(cfg, agent.AgentOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	if err := a.Once(context.Background()); err != nil { // gather, flush, close
		panic(err)
	}
	fmt.Println("batch size:", oc.Settings().BatchSize)
	// Output:
	// demo value=42
	// batch size: 100
}
