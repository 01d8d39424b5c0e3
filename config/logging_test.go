package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func loadAgent(t *testing.T, agent string) AgentConfig {
	t.Helper()
	cfg, err := Load(Options{
		Sources:  []Source{{Name: "agent.conf", Data: []byte("[agent]\n" + agent + "\n")}},
		Registry: cfgTestRegistry(t), LookupEnv: cfgTestEnv,
	})
	require.NoError(t, err)
	return cfg.Agent
}

// TestWarnedAgentKeys: each accepted key without effect is named in exactly one warning,
// and the config it loads differs from the default in that key alone.
func TestWarnedAgentKeys(t *testing.T) {
	tests := []struct {
		line string
		want string // the one warning
		set  func(*AgentConfig)
	}{
		{`statefile = "/var/lib/telegraf/state.json"`, "[agent] statefile has no effect in morse: no morse plugin keeps state",
			func(a *AgentConfig) { a.Statefile = "/var/lib/telegraf/state.json" }},
		{`snmp_translator = "gosmi"`, "[agent] snmp_translator has no effect in morse: morse's SNMP plugins always translate with gosmi",
			func(a *AgentConfig) { a.SnmpTranslator = "gosmi" }},
		{`config_url_retry_attempts = -1`, "[agent] config_url_retry_attempts has no effect in morse",
			func(a *AgentConfig) { a.ConfigURLRetryAttempts = -1 }},
		{`logtarget = "file"`, "[agent] logtarget is deprecated (as in Telegraf, which removes it in 1.40): set logfile alone",
			func(a *AgentConfig) { a.Target = "file" }},
		{`logtarget = "stderr"`, "[agent] logtarget is deprecated (as in Telegraf, which removes it in 1.40): leave logfile empty",
			func(a *AgentConfig) { a.Target = "stderr" }},
	}
	require.Empty(t, DefaultAgentConfig().Warnings(), "the defaults warn of nothing")
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got := loadAgent(t, tt.line)
			w := got.Warnings()
			require.Len(t, w, 1, "one warning for one key")
			require.Contains(t, w[0], tt.want)
			want := DefaultAgentConfig()
			tt.set(&want)
			require.Equal(t, want, got, "nothing else changes")
		})
	}
	all := loadAgent(t, "statefile = \"s\"\nsnmp_translator = \"netsnmp\"\nconfig_url_retry_attempts = 2\n")
	require.Len(t, all.Warnings(), 3, "each key once")
}

func TestLogSettings(t *testing.T) {
	tests := []struct {
		name     string
		agent    string
		wantFile string
		wantZone string
	}{
		{name: "defaults: stderr, UTC", wantZone: "UTC"},
		{name: "logfile", agent: `logfile = "/tmp/m.log"`, wantFile: "/tmp/m.log", wantZone: "UTC"},
		{name: "logtarget stderr ignores logfile", agent: "logfile = \"/tmp/m.log\"\nlogtarget = \"stderr\"", wantZone: "UTC"},
		{name: "logtarget file keeps it", agent: "logfile = \"/tmp/m.log\"\nlogtarget = \"file\"", wantFile: "/tmp/m.log", wantZone: "UTC"},
		{name: "a named zone", agent: `log_with_timezone = "America/Chicago"`, wantZone: "America/Chicago"},
		{name: "local, in any case", agent: `log_with_timezone = "LOCAL"`, wantZone: "Local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := loadAgent(t, tt.agent)
			require.Equal(t, tt.wantFile, a.File(a.Logfile))
			loc, err := a.Location()
			require.NoError(t, err)
			require.Equal(t, tt.wantZone, loc.String())
		})
	}
	a := loadAgent(t, "logformat = \"structured\"\nlogfile_rotation_interval = \"24h\"\nlogfile_rotation_max_size = \"10MB\"\nlogfile_rotation_max_archives = -1\ncollection_offset = \"3s\"")
	require.Equal(t, LogFormatStructured, a.Format)
	require.Equal(t, 24*time.Hour, time.Duration(a.RotationInterval))
	require.EqualValues(t, 10_000_000, a.RotationMaxSize)
	require.Equal(t, -1, a.RotationMaxArchives)
	require.Equal(t, 3*time.Second, time.Duration(a.CollectionOffset))
	require.Equal(t, 5, DefaultAgentConfig().RotationMaxArchives, "Telegraf's default")
}
