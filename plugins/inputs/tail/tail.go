// Package tail is the inputs.tail plugin. It follows files as lines are appended to them
// and parses each complete line in its data_format, with Telegraf's options: files (globs,
// ** included), initial_read_offset (and the deprecated from_beginning), watch_method,
// character_encoding, data_format and its options, path_tag and filters ("ansi_color"). Line
// protocol is parsed a chunk of lines at a time; every other format one line at a time, as
// Telegraf does, each refused line reported with the byte where it starts. pipe = false is
// accepted; max_undelivered_lines and the [inputs.tail.multiline] section are accepted with
// one warning at start, see Init.
//
// It is a service input: Start opens the files and starts one goroutine that polls them
// every poll_interval, and Stop ends that goroutine. Each poll reads what was appended, and
// follows a rotation by rename and create (the renamed file is read to its end first, then
// the new file from its start) and a truncation (read again from the start; recognised by
// the file getting shorter, or by the bytes just before the read position changing when it
// was written past that position again between two polls). A file that
// appears later, or is renamed into a pattern, is read from its start, unless it is a file
// already read under another name. Every line is delivered once; malformed lines are
// reported through acc.AddError and skipped.
//
// Telegraf watches with inotify by default. morse polls for both watch methods: a poll
// every 250 ms costs a few stat calls, and it sees rotations that inotify can miss on
// network and overlay file systems.
package tail

import (
	"context"
	_ "embed"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/inputs/file"
	"github.com/morse-agent/morse/plugins/inputs/file/globpath"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Parse the new lines appended to a file"

//go:embed sample.conf
var sampleConfig string

// Tail is the inputs.tail plugin and its configuration. Build it with New.
type Tail struct {
	// Files are the paths or glob patterns of the files to follow.
	Files []string `toml:"files"`
	// FromBeginning reads the files present at start from their beginning, not their end.
	// Telegraf deprecates it for initial_read_offset = "beginning".
	FromBeginning bool `toml:"from_beginning"`
	// InitialReadOffset is where the files present at start are read from: "beginning",
	// "end", "saved-or-beginning" or "saved-or-end" (the default). morse keeps no offsets
	// across restarts, so the saved-or-* values read from the beginning or the end, as
	// Telegraf does when it has no saved offset.
	InitialReadOffset string `toml:"initial_read_offset"`
	// Pipe says the files are named pipes; morse only follows regular files.
	Pipe bool `toml:"pipe"`
	// MaxUndeliveredLines is Telegraf's bound on lines not yet written by the outputs;
	// accepted with a warning, see Init.
	MaxUndeliveredLines int `toml:"max_undelivered_lines"`
	// Filters are applied to each line before it is parsed: "ansi_color" removes ANSI
	// escape sequences (colours).
	Filters []string `toml:"filters"`
	// Multiline is Telegraf's [inputs.tail.multiline] section; accepted with a warning.
	Multiline *Multiline `toml:"multiline"`
	// WatchMethod is "inotify" or "poll", accepted for Telegraf's configs; morse polls.
	WatchMethod string `toml:"watch_method"`
	// PollInterval is how often the files are checked.
	PollInterval morse.Duration `toml:"poll_interval"`
	// CharacterEncoding is "" or "utf-8".
	CharacterEncoding string `toml:"character_encoding"`
	// Config is data_format ("influx" by default) and the options of each format.
	dataformat.Config
	// PathTag names the tag that receives the file's path; empty adds none.
	PathTag string `toml:"path_tag"`

	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// polled is handed to the watcher; see watcher.polled.
	polled func()
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.ServiceInput = (*Tail)(nil)
	_ morse.Validator    = (*Tail)(nil)
	_ morse.Initializer  = (*Tail)(nil)
	_ morse.LoggerSetter = (*Tail)(nil)
)

// Multiline is Telegraf's [inputs.tail.multiline] section. It joins log lines for the
// grok and similar formats; with line protocol, one metric per line, it has no use, so
// morse accepts it with a warning and leaves lines alone.
type Multiline struct {
	Pattern         string         `toml:"pattern"`
	MatchWhichLine  string         `toml:"match_which_line"`
	InvertMatch     bool           `toml:"invert_match"`
	PreserveNewline bool           `toml:"preserve_newline"`
	Quotation       string         `toml:"quotation"`
	Timeout         morse.Duration `toml:"timeout"`
}

// New returns the plugin with Telegraf's defaults.
func New() *Tail {
	return &Tail{WatchMethod: "inotify", PollInterval: morse.Duration(250 * time.Millisecond),
		Config: dataformat.Config{DataFormat: "influx"}, PathTag: "path", MaxUndeliveredLines: defaultMaxUndelivered}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "tail",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate checks the options before anything is opened.
func (t *Tail) Validate() error {
	for _, p := range t.Files {
		if _, err := globpath.Compile(p); err != nil {
			return morse.Errorf("files", "could not compile glob %q: %v", p, err)
		}
	}
	if t.WatchMethod != "inotify" && t.WatchMethod != "poll" {
		return morse.Errorf("watch_method", "%q is not a watch method; use \"inotify\" or \"poll\"", t.WatchMethod)
	}
	if t.PollInterval <= 0 {
		return morse.Errorf("poll_interval", "must be positive, got %s", t.PollInterval)
	}
	switch t.CharacterEncoding {
	case "", "utf-8", "utf8":
	default:
		return morse.Errorf("character_encoding", "unsupported encoding %q; use \"\" or \"utf-8\"", t.CharacterEncoding)
	}
	if err := t.Config.Validate(); err != nil {
		return err
	}
	switch t.InitialReadOffset {
	case "", "beginning", "end", "saved-or-end", "saved-or-beginning":
	default:
		return morse.Errorf("initial_read_offset", "invalid 'initial_read_offset' setting %q", t.InitialReadOffset)
	}
	if t.Pipe {
		return morse.Errorf("pipe", "named pipes are not supported by morse; tail a regular file")
	}
	if t.MaxUndeliveredLines <= 0 {
		return morse.Errorf("max_undelivered_lines", "must be positive, got %d", t.MaxUndeliveredLines)
	}
	for _, f := range t.Filters {
		if f != "ansi_color" {
			return morse.Errorf("filters", "unknown filter %q; the filter is \"ansi_color\"", f)
		}
	}
	return nil
}

// defaultMaxUndelivered is Telegraf's default max_undelivered_lines.
const defaultMaxUndelivered = 1000

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (t *Tail) SetLogger(l *slog.Logger) { t.log = l }

// Init warns once about the accepted options that do nothing in morse.
func (t *Tail) Init() error {
	l := t.log
	if l == nil {
		l = slog.Default()
	}
	if t.MaxUndeliveredLines != defaultMaxUndelivered {
		l.Warn("max_undelivered_lines has no effect in morse: reading never waits for the outputs; " +
			"each output's buffer (metric_buffer_limit) bounds what is held")
	}
	if t.Multiline != nil {
		l.Warn("[inputs.tail.multiline] has no effect in morse: line protocol is one metric per line, " +
			"so lines are not joined")
	}
	return nil
}

// fromBeginning says whether the files present at start are read from their beginning.
// Without an offset, from_beginning decides, as in Telegraf.
func (t *Tail) fromBeginning() bool {
	switch t.InitialReadOffset {
	case "beginning", "saved-or-beginning":
		return true
	case "":
		return t.FromBeginning
	}
	return false
}

// ansiEscape matches an ANSI escape sequence: CSI sequences (colours, cursor movement) and
// the two-byte ones.
var ansiEscape = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])`)

// filter applies the filters to a chunk of complete lines.
func (t *Tail) filter(b []byte) []byte {
	if slices.Contains(t.Filters, "ansi_color") {
		return ansiEscape.ReplaceAll(b, nil)
	}
	return b
}

// Start opens the files that exist now, at their end unless from_beginning is set, and
// starts the goroutine that follows them. Lines appended after Start returns are read.
func (t *Tail) Start(ctx context.Context, acc morse.Accumulator) error {
	if err := t.Validate(); err != nil {
		return err
	}
	w, err := newWatcher(t, acc)
	if err != nil {
		return err
	}
	for _, g := range w.globs() {
		for _, path := range g.Match() {
			w.follow(path, t.fromBeginning())
		}
	}
	ctx, t.cancel = context.WithCancel(ctx)
	t.wg.Go(func() { w.run(ctx, time.Duration(t.PollInterval)) })
	return nil
}

// newWatcher builds the state of the following goroutine, with the parser of data_format.
func newWatcher(t *Tail, acc morse.Accumulator) (*watcher, error) {
	w := &watcher{tail: t, acc: acc, followers: map[string]*follower{}, consumed: map[fileID]consumedAt{}, polled: t.polled}
	p, err := t.NewParser(parsers.Settings{MetricName: "tail"})
	if err != nil {
		return nil, err
	}
	if e, ok := p.(influx.Entries); ok {
		w.influx = e.Parser // chunks of lines at once, its fast path
	} else {
		w.newParser = func() (parsers.Parser, error) { return t.NewParser(parsers.Settings{MetricName: "tail"}) }
	}
	return w, nil
}

// Stop ends the goroutine that Start started and closes the files. It is safe to call
// more than once, and without Start.
func (t *Tail) Stop() {
	if t.cancel != nil {
		t.cancel()
	}
	t.wg.Wait()
}

// Gather does nothing: the lines are reported as they are read.
func (t *Tail) Gather(context.Context, morse.Accumulator) error { return nil }

// decode applies the character encoding to a chunk of complete lines.
func (t *Tail) decode(b []byte) []byte { return file.Decode(t.CharacterEncoding, b) }
