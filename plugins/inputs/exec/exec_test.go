package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
	return path
}

// parsed is what the parser makes of lines: what the plugin must deliver, no more, no less.
func parsed(t *testing.T, lines string) []morse.Metric {
	t.Helper()
	var out []morse.Metric
	res := (&influx.Parser{}).Parse([]byte(lines), func(m morse.Metric) { out = append(out, m) })
	require.NoError(t, res.Err())
	return out
}

func gather(t *testing.T, e *Exec) *testutil.Accumulator {
	t.Helper()
	require.NoError(t, e.Validate())
	acc := &testutil.Accumulator{}
	require.NoError(t, e.Gather(context.Background(), acc))
	return acc
}

// newExec builds the plugin with commands written as Telegraf's older string form.
func newExec(commands ...string) *Exec {
	e := New()
	e.DataFormat = "influx"
	for _, line := range commands {
		var c Command
		if err := c.UnmarshalTOML(line); err != nil {
			panic(err)
		}
		e.Commands = append(e.Commands, c)
	}
	return e
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("exec")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.exec]]\n"))
	e, ok := info.New().(*Exec)
	require.True(t, ok)
	require.Equal(t, 5*time.Second, time.Duration(e.Timeout))
	require.Equal(t, "influx", e.DataFormat, "morse keeps influx, the default of every other input (Telegraf's is json for exec)")
	require.False(t, e.IgnoreError)

	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := New()
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, fresh.Validate(), "the sample is a valid config")
	require.Equal(t, e.Timeout, fresh.Timeout)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(e *Exec)
		want   string
	}{
		{name: "unknown data_format", change: func(e *Exec) { e.DataFormat = "collectd" },
			want: `data_format: "collectd" is not a data format morse reads`},
		{name: "a format's option", change: func(e *Exec) { e.DataFormat, e.Value.DataType = "value", "decimal" },
			want: `data_type: unknown data type "decimal"`},
		{name: "timeout", change: func(e *Exec) { e.Timeout = 0 }, want: "timeout: must be positive"},
		{name: "environment", change: func(e *Exec) { e.Environment = []string{"NOVALUE"} }, want: `environment: "NOVALUE" is not of the form KEY=value`},
		{name: "quoting", change: func(e *Exec) { e.Command = `echo "unterminated` }, want: "unterminated double-quoted string"},
		{name: "empty", change: func(e *Exec) { e.Commands = []Command{{}} }, want: "commands: command cannot be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec("true")
			require.NoError(t, e.Validate())
			tt.change(e)
			var fe *morse.FieldError
			require.ErrorAs(t, e.Validate(), &fe)
			require.ErrorContains(t, e.Validate(), tt.want)
		})
	}
}

func TestSplitWords(t *testing.T) {
	tests := map[string][]string{
		`/bin/echo a b`:                {"/bin/echo", "a", "b"},
		`echo 'a b' "c d"`:             {"echo", "a b", "c d"},
		`echo "say \"hi\" \$HOME \x"`:  {"echo", `say "hi" $HOME \x`},
		`echo a\ b 'it''s' ""`:         {"echo", "a b", "its", ""},
		"  spaced\t out  ":             {"spaced", "out"},
		`echo 'single "keeps" \ all'`:  {"echo", `single "keeps" \ all`},
		`x=1 "/usr/bin/my tool" --opt`: {"x=1", "/usr/bin/my tool", "--opt"},
	}
	for in, want := range tests {
		got, err := splitWords(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{`echo 'open`, `echo "open`, `echo \`} {
		_, err := splitWords(bad)
		require.Error(t, err, bad)
	}
}

func TestExactlyTheLinesWritten(t *testing.T) {
	dir := t.TempDir()
	lines := "m,host=a v=1i 1700000000000000000\nm,host=b v=2i 1700000000000000001\n"
	cmd := script(t, dir, "lines.sh", "printf 'm,host=a v=1i 1700000000000000000\\nthis is not line protocol\\nm,host=b v=2i 1700000000000000001\\n'\n")
	acc := gather(t, newExec(cmd))
	require.Equal(t, parsed(t, lines), acc.Metrics(), "the valid lines around a malformed one are kept, each once")
	errs := acc.Errors()
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], "exec: 1 entries of the output of")
	require.ErrorContains(t, errs[0], `line 2: `)
	require.ErrorContains(t, errs[0], `"this is not line protocol"`)
}

// TestLogfmtOutput reads a command's output in data_format "logfmt": each line is a metric
// named "exec", and a malformed line is reported with its line and column while the lines
// around it are kept.
func TestLogfmtOutput(t *testing.T) {
	dir := t.TempDir()
	cmd := script(t, dir, "logfmt.sh", `printf 'host=a load=0.5 up=true\nbad="open\nhost=b load=2 msg="all good"\n'`+"\n")
	e := newExec(cmd)
	e.DataFormat, e.Logfmt = "logfmt", dataformat.Logfmt{LogfmtTagKeys: []string{"host"}}
	acc := gather(t, e)
	var got []string
	for _, m := range acc.Metrics() {
		got = append(got, testutil.Canon([]morse.Metric{m.WithTime(time.Unix(0, 0))})[0])
	}
	require.Equal(t, []string{
		"exec,host=a load=float:0.5,up=boolean:true 0",
		`exec,host=b load=integer:2,msg=string:"all good" 0`,
	}, got)
	errs := acc.Errors()
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], `exec: 1 entries of the output of`)
	require.ErrorContains(t, errs[0], `line 2, column 10: unterminated quoted value: "bad=\"open"`)
}

func TestGlobArgumentsAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "a.sh", `echo "a arg=\"$1\",env=\"$MORSE_TEST\""`+"\n")
	script(t, dir, "b.sh", `echo "b arg=\"$1\",env=\"$MORSE_TEST\""`+"\n")
	e := newExec(filepath.Join(dir, "*.sh") + " 'first arg'")
	e.Environment = []string{"MORSE_TEST=from config"}
	acc := gather(t, e)
	require.Empty(t, acc.Errors())
	require.ElementsMatch(t, []string{"a first arg from config", "b first arg from config"}, summaries(acc.Metrics()))
}

func summaries(ms []morse.Metric) []string {
	var out []string
	for _, m := range ms {
		arg, _ := m.Field("arg")
		env, _ := m.Field("env")
		out = append(out, m.Name()+" "+arg.Str()+" "+env.Str())
	}
	return out
}

func TestFailingCommands(t *testing.T) {
	dir := t.TempDir()
	failing := script(t, dir, "fail.sh", "echo 'm v=1i 1'\necho 'first stderr line' >&2\necho 'second' >&2\nexit 3\n")
	tests := []struct {
		name        string
		command     string
		ignoreError bool
		wantErr     string
		wantMetrics int
	}{
		{name: "non-zero exit", command: failing, wantErr: `exec: exit status 3 for command "` + failing + `": first stderr line`},
		{name: "non-zero exit, ignore_error", command: failing, ignoreError: true, wantMetrics: 1},
		{name: "not found", command: filepath.Join(dir, "missing.sh"), wantErr: "no such file or directory"},
		{name: "not found in PATH", command: "morse-no-such-program --flag", wantErr: "executable file not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(tt.command)
			e.IgnoreError = tt.ignoreError
			acc := gather(t, e)
			require.Len(t, acc.Metrics(), tt.wantMetrics)
			if tt.wantErr == "" {
				require.Empty(t, acc.Errors())
				return
			}
			require.Len(t, acc.Errors(), 1)
			require.ErrorContains(t, acc.Errors()[0], tt.wantErr)
		})
	}
}

func TestTimeout(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		body string
	}{
		{name: "stops on SIGTERM", body: "echo 'm v=1i 1'\nsleep 30\n"},
		// The script ignores SIGTERM; its sleep child does not, so the trap matters only if
		// the kill reaches the script itself: SIGKILL after the grace period does.
		{name: "ignores SIGTERM", body: "trap '' TERM\necho 'm v=1i 1'\nwhile true; do sleep 1; done\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(script(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".sh", tt.body))
			e.Timeout = morse.Duration(200 * time.Millisecond)
			e.killGrace = 200 * time.Millisecond
			start := time.Now()
			acc := gather(t, e)
			require.Less(t, time.Since(start), 10*time.Second, "the command is stopped, children included")
			require.Len(t, acc.Errors(), 1)
			require.ErrorIs(t, acc.Errors()[0], ErrTimeout)
			require.Empty(t, acc.Metrics(), "output of a timed-out command is not parsed, as in Telegraf")
		})
	}
	e := newExec(script(t, dir, "slow.sh", "echo 'm v=1i 1'\nexec sleep 30\n"))
	e.Timeout = morse.Duration(200 * time.Millisecond)
	e.IgnoreError = true
	acc := gather(t, e)
	require.Len(t, acc.Metrics(), 1, "with ignore_error the partial output is parsed")
}

func TestGoldenRealGather(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/exec.golden")
	e := New()
	md, err := toml.Decode(shapes.Config, e)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the golden config uses Telegraf's option names")
	var readme strings.Builder
	for i := range 7 {
		fmt.Fprintf(&readme, "cpu,cpu=cpu%d,host=foo,datacenter=us-east usage_idle=99,usage_busy=1\n", i)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	require.NoError(t, os.WriteFile(out, []byte(readme.String()+"cpu,cpu=cpu7 usage_idle=\n"), 0o644))
	e.Commands = []Command{{"cat", out}}
	acc := gather(t, e)
	ms := acc.Metrics()
	require.Len(t, ms, 7)
	require.Len(t, acc.Errors(), 1, "the malformed line is reported")
	require.Empty(t, shapes.Check(ms))
	require.Equal(t, []string{"cpu: tag host: missing"}, shapes.Check([]morse.Metric{ms[0].WithoutTag("host")}))
	for _, m := range ms {
		require.WithinDuration(t, time.Now(), m.Time(), time.Minute, "lines without a time get the gather's")
	}
}

func TestCommandForms(t *testing.T) {
	tests := []struct {
		name, toml string
		want       []Command
		wantErr    string
	}{
		{name: "Telegraf 1.39's array syntax", toml: `commands = [["echo", "value 1"], ["/bin/sh", "-c", "echo a b"]]`,
			want: []Command{{"echo", "value 1"}, {"/bin/sh", "-c", "echo a b"}}},
		{name: "the older string form, split as a shell would", toml: `commands = ["echo 'value 1'"]`,
			want: []Command{{"echo", "value 1"}}},
		{name: "both forms mixed", toml: `commands = ["true", ["echo", "x"]]`, want: []Command{{"true"}, {"echo", "x"}}},
		{name: "a number is refused", toml: `commands = [["echo", 1]]`, wantErr: "invalid entry 1 of type int64"},
		{name: "an empty command is refused", toml: `commands = [[]]`, wantErr: "command cannot be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New()
			_, err := toml.Decode(tt.toml, e)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, e.Commands)
		})
	}
}

func TestArraySyntaxKeepsArgumentsWhole(t *testing.T) {
	e := New()
	e.DataFormat = "influx"
	e.Commands = []Command{{"/bin/sh", "-c", `echo "m v=\"$1\""`, "sh", "a b"}}
	acc := gather(t, e)
	require.Empty(t, acc.Errors())
	require.Len(t, acc.Metrics(), 1)
	v, _ := acc.Metrics()[0].Field("v")
	require.Equal(t, "a b", v.Str(), "an argument with a space stays one argument")
}

func TestLogStderr(t *testing.T) {
	dir := t.TempDir()
	body := "echo 'm v=1i'\necho 'E! broken' >&2\necho 'W! careful' >&2\necho 'I! note' >&2\n" +
		"echo 'D! detail' >&2\necho 'T! trace' >&2\necho '' >&2\necho 'plain text' >&2\n"
	e := newExec(script(t, dir, "chatty.sh", body))
	var logs testutil.Logs
	e.SetLogger(logs.Logger())
	acc := gather(t, e)
	require.Empty(t, acc.Errors())
	require.Len(t, acc.Metrics(), 1)
	require.Empty(t, logs.All(), "without log_stderr nothing is logged")

	e.LogStdErr = true
	acc = gather(t, e)
	require.Len(t, acc.Metrics(), 1, "the output is parsed as before")
	cmd := "command=" + e.Commands[0].String()
	require.Equal(t, []string{
		"ERROR broken " + cmd, "WARN careful " + cmd, "INFO note " + cmd,
		"DEBUG detail " + cmd, "DEBUG trace " + cmd, "ERROR plain text " + cmd,
	}, logs.All())
}
