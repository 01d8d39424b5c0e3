package agent

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestConfigWarningsLoggedOnceAtStart: what loading the config warned of (an unset
// variable, a removed Telegraf option) is logged once when the agent is made, with its
// file and line, and not again while it runs.
func TestConfigWarningsLoggedOnceAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.Agent.Interval = morse.Duration(time.Second)
		cfg.Warnings = []config.Warning{{File: "telegraf.conf", Line: 12, Key: "outputs.influxdb.url", Msg: "use urls instead"}}
		cfg.AddInput("clock", &clockInput{start: time.Now()})
		cfg.AddOutput("discard", &testutil.DiscardOutput{})
		logs := &testutil.Logs{}
		a, err := NewAgent(cfg, AgentOptions{Logger: logs.Logger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		var n int
		for _, w := range logs.Warnings() {
			if w == "telegraf.conf:12: outputs.influxdb.url: use urls instead" {
				n++
			}
		}
		require.Equal(t, 1, n, "%q", logs.Warnings())
	})
}
