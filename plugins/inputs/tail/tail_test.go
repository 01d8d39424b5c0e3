package tail

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

// expected is what the plugin must deliver for lines appended to path: each line once,
// tagged with the path.
func expected(t *testing.T, path string, lines ...string) []morse.Metric {
	t.Helper()
	var out []morse.Metric
	res := (&influx.Parser{}).Parse([]byte(strings.Join(lines, "")), func(m morse.Metric) {
		out = append(out, m.WithTag("path", path))
	})
	require.NoError(t, res.Err())
	return out
}

func line(i int) string { return fmt.Sprintf("m,src=test v=%di %d\n", i, 1700000000000000000+i) }

func appendTo(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(lines, ""))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// manual builds the watcher that Start would run, to drive polls one by one.
func manual(tl *Tail, acc morse.Accumulator) *watcher {
	w, err := newWatcher(tl, acc)
	if err != nil {
		panic(err)
	}
	w.polled = nil
	return w
}

func newTail(files ...string) *Tail {
	tl := New()
	tl.Files = files
	tl.PollInterval = morse.Duration(10 * time.Millisecond)
	return tl
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("tail")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.tail]]\n"))
	tl, ok := info.New().(*Tail)
	require.True(t, ok)
	require.False(t, tl.FromBeginning)
	require.Equal(t, "inotify", tl.WatchMethod)
	require.Equal(t, "path", tl.PathTag)
	require.Equal(t, 250*time.Millisecond, time.Duration(tl.PollInterval))
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := New()
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, fresh.Validate())
	require.Equal(t, tl.PollInterval, fresh.PollInterval)
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		change func(tl *Tail)
		want   string
	}{
		{change: func(tl *Tail) { tl.Files = []string{"x[a"} }, want: "files: could not compile glob"},
		{change: func(tl *Tail) { tl.WatchMethod = "fanotify" }, want: `watch_method: "fanotify" is not a watch method`},
		{change: func(tl *Tail) { tl.PollInterval = 0 }, want: "poll_interval: must be positive"},
		{change: func(tl *Tail) { tl.CharacterEncoding = "utf-16le" }, want: "character_encoding: unsupported encoding"},
		{change: func(tl *Tail) { tl.DataFormat = "collectd" }, want: `data_format: "collectd" is not a data format morse reads`},
	} {
		tl := newTail("/tmp/x")
		tt.change(tl)
		require.ErrorContains(t, tl.Validate(), tt.want)
	}
	empty := newTail()
	require.NoError(t, empty.Validate(), "no files: nothing to follow, as in Telegraf")
	require.NoError(t, empty.Start(context.Background(), &testutil.Accumulator{}))
	empty.Stop()
}

func TestFromBeginningAndPartialLines(t *testing.T) {
	for _, fromBeginning := range []bool{false, true} {
		t.Run(fmt.Sprint("from_beginning=", fromBeginning), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.log")
			appendTo(t, path, line(1))
			tl := newTail(path)
			tl.FromBeginning = fromBeginning
			acc := &testutil.Accumulator{}
			w := manual(tl, acc)
			w.follow(path, tl.FromBeginning)
			w.poll()
			// A line without its newline waits for it.
			appendTo(t, path, line(2), strings.TrimSuffix(line(3), "\n"))
			w.poll()
			appendTo(t, path, "\n")
			w.poll()
			w.closeAll()
			want := expected(t, path, line(2), line(3))
			if fromBeginning {
				want = expected(t, path, line(1), line(2), line(3))
			}
			require.Equal(t, want, acc.Metrics())
			require.Empty(t, acc.Errors())
		})
	}
}

func TestMalformedLinesAreSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.log")
	appendTo(t, path)
	acc := &testutil.Accumulator{}
	w := manual(newTail(path), acc)
	w.follow(path, false)
	appendTo(t, path, line(1), "not line protocol\n", line(2))
	w.poll()
	w.closeAll()
	require.Equal(t, expected(t, path, line(1), line(2)), acc.Metrics())
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "unable to parse 'not line protocol'")
}

// TestLogfmtLineByLine follows a file in data_format "logfmt": each appended line is
// parsed alone, as in Telegraf, including one completed by a later write; a malformed line
// is reported with the byte where it starts and the lines around it are kept.
func TestLogfmtLineByLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	appendTo(t, path, "lvl=info n=0\n") // before the start: not read
	tl := newTail(path)
	tl.DataFormat, tl.Logfmt = "logfmt", dataformat.Logfmt{LogfmtTagKeys: []string{"lvl"}}
	tl.PathTag = ""
	acc := &testutil.Accumulator{}
	w := manual(tl, acc)
	w.follow(path, false)
	appendTo(t, path, "lvl=info n=1\r\nmsg=\"open\nlvl=warn n=2 msg=\"disk ", "")
	w.poll()
	appendTo(t, path, "full\"\n")
	w.poll()
	w.closeAll()
	var got []string
	for _, m := range acc.Metrics() {
		got = append(got, testutil.Canon([]morse.Metric{m.WithTime(time.Unix(0, 0))})[0])
	}
	require.Equal(t, []string{"tail,lvl=info n=integer:1 0", `tail,lvl=warn n=integer:2,msg=string:"disk full" 0`}, got)
	require.Len(t, acc.Errors(), 1)
	require.EqualError(t, acc.Errors()[0], `tail: 1 entries refused in "`+path+`": byte 27: line 1, column 10: unterminated quoted value: "msg=\"open"`)
}

func TestRotationAndTruncation(t *testing.T) {
	tests := []struct {
		name    string
		pattern string // relative to the directory
	}{
		{name: "pattern matches the live name only", pattern: "app.log"},
		{name: "pattern matches the rotated name too", pattern: "app.log*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "app.log")
			appendTo(t, path)
			acc := &testutil.Accumulator{}
			w := manual(newTail(filepath.Join(dir, tt.pattern)), acc)
			w.follow(path, false)
			appendTo(t, path, line(1), line(2))
			w.poll()

			// A logger still writing to the old file after the rename, then a new file.
			old, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			require.NoError(t, os.Rename(path, path+".1"))
			_, err = old.WriteString(line(3))
			require.NoError(t, err)
			require.NoError(t, old.Close())
			appendTo(t, path, line(4))
			w.poll()
			w.poll()
			appendTo(t, path, line(5))
			w.poll()

			// Truncated, then written again.
			require.NoError(t, os.Truncate(path, 0))
			appendTo(t, path, line(6))
			w.poll()
			appendTo(t, path, line(7))
			w.poll()
			w.poll()
			w.closeAll()

			var got []string
			for _, m := range acc.Metrics() {
				v, _ := m.Field("v")
				got = append(got, v.String())
			}
			require.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7"}, got, "every line once, in order")
			require.Empty(t, acc.Errors())
		})
	}
}

func TestTruncatedAndRewrittenPastTheOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.log")
	appendTo(t, path)
	acc := &testutil.Accumulator{}
	w := manual(newTail(path), acc)
	w.follow(path, false)
	appendTo(t, path, line(1), line(2))
	w.poll()
	// Between two polls the file is truncated and grows past where it was read to.
	require.NoError(t, os.Truncate(path, 0))
	appendTo(t, path, line(3), line(4), line(5))
	w.poll()
	w.closeAll()
	require.Equal(t, expected(t, path, line(1), line(2), line(3), line(4), line(5)), acc.Metrics())
}

func TestFilesAppearingLater(t *testing.T) {
	dir := t.TempDir()
	acc := &testutil.Accumulator{}
	w := manual(newTail(filepath.Join(dir, "*.log")), acc)
	w.poll()
	late := filepath.Join(dir, "late.log")
	appendTo(t, late, line(1))
	w.poll()
	appendTo(t, late, line(2))
	w.poll()
	w.closeAll()
	require.Equal(t, expected(t, late, line(1), line(2)), acc.Metrics(), "a file that appears later is read from its start")
}

// TestServiceAcrossRotationAndTruncation runs the plugin as the agent does, with Start and
// Stop and its own goroutine, and waits on the accumulator and on completed polls.
func TestServiceAcrossRotationAndTruncation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendTo(t, path, line(0)) // before Start: not read, as from_beginning is false
	tl := newTail(path)
	polls := make(chan struct{}, 1000)
	tl.polled = func() {
		select {
		case polls <- struct{}{}:
		default:
		}
	}
	acc := &testutil.Accumulator{}
	require.NoError(t, tl.Start(context.Background(), acc))
	t.Cleanup(tl.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitPolls := func(n int) {
		for range n {
			select {
			case <-polls:
			case <-ctx.Done():
				t.Fatal("the plugin stopped polling")
			}
		}
	}

	appendTo(t, path, line(1), line(2))
	require.NoError(t, acc.Wait(ctx, 2))
	require.NoError(t, os.Rename(path, path+".1"))
	appendTo(t, path, line(3))
	require.NoError(t, acc.Wait(ctx, 3))
	require.NoError(t, os.Truncate(path, 0))
	appendTo(t, path, line(4))
	require.NoError(t, acc.Wait(ctx, 4))
	appendTo(t, path, line(5))
	require.NoError(t, acc.Wait(ctx, 5))
	// Two more complete polls: anything read twice would show up by then.
	for len(polls) > 0 {
		<-polls
	}
	waitPolls(2)
	tl.Stop()
	tl.Stop()
	require.Equal(t, expected(t, path, line(1), line(2), line(3), line(4), line(5)), acc.Metrics())
	require.Empty(t, acc.Errors())
}

func TestGoldenRealGather(t *testing.T) {
	shapes := testutil.LoadGolden(t, "testdata/tail.golden")
	tl := New()
	md, err := toml.Decode(shapes.Config, tl)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the golden config uses Telegraf's option names")
	path := filepath.Join(t.TempDir(), "metrics.out")
	appendTo(t, path)
	tl.Files = []string{path}
	acc := &testutil.Accumulator{}
	require.NoError(t, tl.Start(context.Background(), acc))
	t.Cleanup(tl.Stop)

	var body strings.Builder
	for i := range 7 {
		fmt.Fprintf(&body, "cpu,cpu=cpu%d,host=foo,datacenter=us-east usage_idle=99,usage_busy=1\n", i)
		if i == 3 {
			body.WriteString("cpu,cpu=broken usage_idle=\n")
		}
	}
	appendTo(t, path, body.String())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, acc.Wait(ctx, 7))
	tl.Stop()
	ms := acc.Metrics()
	require.Len(t, ms, 7)
	require.Len(t, acc.Errors(), 1)
	require.Empty(t, shapes.Check(ms))
	require.Equal(t, []string{"cpu: tag path: missing"}, shapes.Check([]morse.Metric{ms[0].WithoutTag("path")}))
}

func TestInitialReadOffset(t *testing.T) {
	tests := []struct {
		offset        string
		fromBeginning bool
		want          bool
	}{
		{offset: "", want: false},
		{offset: "", fromBeginning: true, want: true},
		{offset: "beginning", want: true},
		{offset: "saved-or-beginning", want: true},
		{offset: "end", fromBeginning: true, want: false},
		{offset: "saved-or-end", want: false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q,%v", tt.offset, tt.fromBeginning), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.out")
			appendTo(t, path, line(1))
			tl := newTail(path)
			tl.InitialReadOffset = tt.offset
			tl.FromBeginning = tt.fromBeginning
			require.NoError(t, tl.Validate())
			acc := &testutil.Accumulator{}
			w := manual(tl, acc)
			w.follow(path, tl.fromBeginning())
			appendTo(t, path, line(2))
			w.poll()
			want := expected(t, path, line(2))
			if tt.want {
				want = expected(t, path, line(1), line(2))
			}
			require.Equal(t, want, acc.Metrics())
		})
	}
	tl := newTail("x")
	tl.InitialReadOffset = "middle"
	require.ErrorContains(t, tl.Validate(), `initial_read_offset: invalid 'initial_read_offset' setting "middle"`)
}

func TestAnsiColorFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.out")
	appendTo(t, path)
	tl := newTail(path)
	tl.Filters = []string{"ansi_color"}
	require.NoError(t, tl.Validate())
	acc := &testutil.Accumulator{}
	w := manual(tl, acc)
	w.follow(path, false)
	appendTo(t, path, "\x1b[1;31mm,src=test\x1b[0m v=1i 1700000000000000001\n")
	w.poll()
	require.Empty(t, acc.Errors())
	require.Equal(t, expected(t, path, line(1)), acc.Metrics(), "the colour codes are removed before parsing")

	tl.Filters = []string{"strip_everything"}
	require.ErrorContains(t, tl.Validate(), `filters: unknown filter "strip_everything"`)
}

func TestAcceptedOptionsWarnOnce(t *testing.T) {
	tl := newTail("x")
	require.NoError(t, tl.Validate())
	var logs testutil.Logs
	tl.SetLogger(logs.Logger())
	require.NoError(t, tl.Init())
	require.Empty(t, logs.All(), "Telegraf's defaults warn about nothing")

	_, err := toml.Decode("max_undelivered_lines = 50\n[multiline]\npattern = '^\\s'\ntimeout = \"5s\"\n", tl)
	require.NoError(t, err)
	require.NoError(t, tl.Validate())
	require.NoError(t, tl.Init())
	require.Equal(t, []string{
		"max_undelivered_lines has no effect in morse: reading never waits for the outputs; " +
			"each output's buffer (metric_buffer_limit) bounds what is held",
		"[inputs.tail.multiline] has no effect in morse: line protocol is one metric per line, so lines are not joined",
	}, logs.Warnings())

	tl.Pipe = true
	require.ErrorContains(t, tl.Validate(), "pipe: named pipes are not supported by morse")
	tl.Pipe = false
	tl.MaxUndeliveredLines = 0
	require.ErrorContains(t, tl.Validate(), "max_undelivered_lines: must be positive")
}
