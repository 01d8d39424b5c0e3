package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
)

func agentFrom(t *testing.T, text string) config.AgentConfig {
	t.Helper()
	f, err := config.Read(config.Options{
		Sources:   []config.Source{{Name: "agent.conf", Data: []byte("[agent]\n" + text + "\n")}},
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	require.NoError(t, err)
	return f.Agent
}

func TestLogFormats(t *testing.T) {
	tests := []struct {
		name  string
		agent string
		check func(t *testing.T, line string)
	}{
		{
			name: "text, Telegraf's, UTC by default",
			check: func(t *testing.T, line string) {
				require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ W! \[outputs.file\] disk nearly full\n$`, line)
			},
		},
		{
			name:  "text in a named zone",
			agent: `log_with_timezone = "America/Chicago"`,
			check: func(t *testing.T, line string) {
				require.Regexp(t, `^\S+T\S+-0[56]:00 W! `, line)
			},
		},
		{
			name:  "logfmt, UTC by default",
			agent: `logformat = "logfmt"`,
			check: func(t *testing.T, line string) {
				require.Regexp(t, `^time=\S+Z level=WARN msg="disk nearly full" plugin=outputs.file\n$`, line)
			},
		},
		{
			name:  "logfmt in a named zone",
			agent: "logformat = \"logfmt\"\nlog_with_timezone = \"America/Chicago\"",
			check: func(t *testing.T, line string) {
				require.Regexp(t, `^time=\S+-0[56]:00 level=WARN `, line)
			},
		},
		{
			name:  "structured",
			agent: `logformat = "structured"`,
			check: func(t *testing.T, line string) {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				require.Equal(t, "disk nearly full", rec["msg"])
				require.Equal(t, "WARN", rec["level"], "Telegraf's level names")
				require.Equal(t, "outputs.file", rec["plugin"])
				require.True(t, strings.HasSuffix(rec["time"].(string), "Z"))
			},
		},
		{
			name:  "structured with its message key",
			agent: "logformat = \"structured\"\nstructured_log_message_key = \"message\"",
			check: func(t *testing.T, line string) {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				require.Equal(t, "disk nearly full", rec["message"])
				require.NotContains(t, rec, "msg")
			},
		},
		{
			name:  "the message key is for structured logs only",
			agent: `structured_log_message_key = "message"`,
			check: func(t *testing.T, line string) { require.Contains(t, line, "] disk nearly full\n") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger, closeLog, err := newLogger(agentFrom(t, tt.agent), false, &buf)
			require.NoError(t, err)
			logger.Warn("disk nearly full", "plugin", "outputs.file")
			closeLog()
			tt.check(t, buf.String())
		})
	}
}

func TestLogfileRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "morse.log")
	ac := agentFrom(t, `logfile = "`+path+`"
logfile_rotation_max_size = "200B"
logfile_rotation_max_archives = 1`)
	var stderr bytes.Buffer
	logger, closeLog, err := newLogger(ac, false, &stderr)
	require.NoError(t, err)
	for range 5 {
		logger.Info(strings.Repeat("x", 150))
	}
	closeLog()
	require.Empty(t, stderr.String(), "the log goes to the file")
	archives, err := filepath.Glob(filepath.Join(dir, "sub", "morse.*-*.log"))
	require.NoError(t, err)
	require.Len(t, archives, 1, "rotated, and one archive kept")
	live, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Less(t, len(live), 400)
}

func TestLogtargetStderrIgnoresLogfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "morse.log")
	var stderr bytes.Buffer
	logger, closeLog, err := newLogger(agentFrom(t, "logfile = \""+path+"\"\nlogtarget = \"stderr\""), false, &stderr)
	require.NoError(t, err)
	logger.Info("hello")
	closeLog()
	require.Contains(t, stderr.String(), "I! [agent] hello")
	require.NoFileExists(t, path)
}
