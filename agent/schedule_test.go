package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// clockInput records when it gathers, as offsets from the bubble's start.
type clockInput struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (c *clockInput) Gather(context.Context, morse.Accumulator) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, time.Since(c.start))
	return nil
}

// TestCollectionOffset: the offset shifts every gather past its mark, as Telegraf's ticker
// does; an input's own offset replaces the agent's.
func TestCollectionOffset(t *testing.T) {
	s := time.Second
	tests := []struct {
		name        string
		round       bool
		agentOffset time.Duration
		inputOffset time.Duration
		want        []time.Duration
	}{
		{name: "aligned, no offset", round: true, want: []time.Duration{10 * s, 20 * s, 30 * s}},
		{name: "aligned, agent offset", round: true, agentOffset: 3 * s, want: []time.Duration{13 * s, 23 * s, 33 * s}},
		{name: "aligned, the input's offset wins", round: true, agentOffset: 3 * s, inputOffset: 7 * s, want: []time.Duration{17 * s, 27 * s, 37 * s}},
		{name: "unaligned, agent offset", agentOffset: 2 * s, want: []time.Duration{2 * s, 12 * s, 22 * s, 32 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The bubble's clock starts at midnight UTC 2000-01-01, a multiple of 10 s.
				in := &clockInput{start: time.Now()}
				cfg := config.DefaultConfig()
				cfg.Agent.RoundInterval = tt.round
				cfg.Agent.CollectionOffset = morse.Duration(tt.agentOffset)
				cfg.AddInput("clock", in).Common.CollectionOffset = morse.Duration(tt.inputOffset)
				cfg.AddOutput("discard", &testutil.DiscardOutput{})
				a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				stop := runAgent(t, a)
				time.Sleep(39 * s)
				synctest.Wait()
				require.NoError(t, stop())
				in.mu.Lock()
				defer in.mu.Unlock()
				require.Equal(t, tt.want, in.at)
			})
		})
	}
}

// TestAgentKeyWarningsAtStart: the accepted keys without effect are each named once, when
// the agent is made, and running it warns of them no more.
func TestAgentKeyWarningsAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.Agent.Statefile = "/var/lib/telegraf/state"
		cfg.Agent.SnmpTranslator = "gosmi"
		cfg.Agent.Interval = morse.Duration(time.Second)
		cfg.AddInput("clock", &clockInput{start: time.Now()})
		cfg.AddOutput("discard", &testutil.DiscardOutput{})
		logs := &testutil.Logs{}
		a, err := NewAgent(cfg, AgentOptions{Logger: logs.Logger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.NoError(t, stop())
		var named []string
		for _, w := range logs.Warnings() {
			for _, key := range []string{"statefile", "snmp_translator"} {
				if strings.Contains(w, key) {
					named = append(named, key)
				}
			}
		}
		require.ElementsMatch(t, []string{"statefile", "snmp_translator"}, named, "each key once: %q", logs.Warnings())
	})
}
