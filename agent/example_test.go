package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/plugins/outputs/file"
)

// staticInput is a tiny input plugin defined in code.
type staticInput struct{}

func (staticInput) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("demo", map[string]any{"value": 42}, map[string]string{"kind": "static"}, time.Unix(1700000000, 0))
	return nil
}

// ExampleAgent builds a whole agent in code and runs it once, as `morse --once` does.
func ExampleAgent() {
	cfg := config.DefaultConfig()
	cfg.AddInput("static", staticInput{})
	cfg.AddOutput("file", file.New())
	// [agent] settings apply wherever they are set before the agent starts.
	cfg.Agent.OmitHostname = true
	cfg.GlobalTags["dc"] = "eu-1"
	a, err := agent.NewAgent(cfg, agent.AgentOptions{
		OnDrop: func(ev batch.DropEvent) { fmt.Println("lost", ev.Count, "from", ev.Output) },
	})
	if err != nil {
		panic(err)
	}
	if err := a.Once(context.Background()); err != nil { // gather, flush, close
		panic(err)
	}
	// Output:
	// demo,dc=eu-1,kind=static value=42i 1700000000000000000
}

// tickInput gathers one metric and says so.
type tickInput struct{ gathered chan struct{} }

func (in *tickInput) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("demo", map[string]any{"value": 1}, nil, time.Unix(1700000000, 0))
	select {
	case in.gathered <- struct{}{}:
	default:
	}
	return nil
}

// ExampleAgent_Reload reloads an agent built in code with configs built anew. Passing the
// same plugin instances with the same settings keeps them running, with what the output
// buffered; passing the output again with another flush_interval hands it to a new writer
// after the old one has written what it holds and closed it. Nothing is lost either way.
func ExampleAgent_Reload() {
	in := &tickInput{gathered: make(chan struct{}, 1)}
	out := file.New() // prints line protocol
	build := func(flush time.Duration) *config.Config {
		cfg := config.DefaultConfig()
		cfg.Agent.OmitHostname, cfg.Agent.RoundInterval = true, false // gather at once
		cfg.AddInput("tick", in).Common.Interval = morse.Duration(time.Hour)
		cfg.AddOutput("file", out).Common.FlushInterval = morse.Duration(flush)
		return cfg
	}
	a, err := agent.NewAgent(build(time.Hour), agent.AgentOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	<-in.gathered // the first gather is buffered; the next flush is an hour away

	if err := a.Reload(context.Background(), build(time.Hour)); err != nil {
		panic(err)
	}
	fmt.Println("kept, still buffered:", a.Outputs()[0].Stats.BufferSize)
	if err := a.Reload(context.Background(), build(time.Minute)); err != nil {
		panic(err)
	}
	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// kept, still buffered: 1
	// demo value=1i 1700000000000000000
	// run: <nil>
}
