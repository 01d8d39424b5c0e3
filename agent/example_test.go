package agent_test

import (
	"context"
	"fmt"
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
