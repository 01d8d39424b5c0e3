package tail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/inputs/file/globpath"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// maxLineBytes bounds a line that has no newline yet, so that a file without line ends
// cannot make the plugin buffer without limit.
const maxLineBytes = 1 << 20

// readChunk is how much one read takes from a file.
const readChunk = 64 << 10

// watcher is the state of the following goroutine. Only that goroutine touches it once
// Start has returned.
type watcher struct {
	tail *Tail
	acc  morse.Accumulator
	// influx is the line protocol parser, which reads a chunk of lines at once; newParser
	// builds the parser of any other data_format, one per followed file as in Telegraf
	// (csv's header rows are each file's), handed one line at a time.
	influx    *influx.Parser
	newParser func() (parsers.Parser, error)
	followers map[string]*follower
	// consumed remembers how far files that were renamed away were read, so that a rotated
	// file which still matches a pattern under its new name is not read twice. Entries
	// live for two polls, long enough for the next poll to find the new name and short
	// enough that a later file cannot inherit an offset through a reused inode number.
	consumed map[fileID]consumedAt
	polls    int
	buf      []byte
	// polled, when set, is called after every poll; tests wait on it instead of sleeping.
	polled func()
}

type consumedAt struct {
	offset int64
	poll   int
}

// follower follows one path.
type follower struct {
	path    string
	parser  parsers.Parser // of a data_format other than influx
	f       *os.File
	info    os.FileInfo // of the open file, to tell a new file under the same name
	id      fileID
	offset  int64
	partial []byte
	// last holds the bytes just before offset. A file whose bytes there changed was
	// truncated and written again, even if it has grown past offset since.
	last []byte
}

// lastBytes is how much of what was read last a follower keeps to recognise its file.
const lastBytes = 64

func (w *watcher) globs() []*globpath.Glob {
	out := make([]*globpath.Glob, 0, len(w.tail.Files))
	for _, p := range w.tail.Files {
		if g, err := globpath.Compile(p); err == nil {
			out = append(out, g)
		}
	}
	return out
}

func (w *watcher) run(ctx context.Context, interval time.Duration) {
	defer w.closeAll()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		w.poll()
		if w.polled != nil {
			w.polled()
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// poll reads every followed file once, then looks for new files. Followed files come
// first, so that a rotation is known before the rotated file turns up under its new name.
func (w *watcher) poll() {
	w.polls++
	for id, c := range w.consumed {
		if c.poll < w.polls-2 {
			delete(w.consumed, id)
		}
	}
	for _, fl := range w.followers {
		w.check(fl)
	}
	for _, g := range w.globs() {
		for _, path := range g.Match() {
			if _, ok := w.followers[path]; !ok {
				w.follow(path, true)
				w.check(w.followers[path])
			}
		}
	}
}

// follow starts following path, from its start or its end.
func (w *watcher) follow(path string, fromStart bool) {
	fl := &follower{path: path}
	if w.newParser != nil {
		p, err := w.newParser()
		if err != nil { // not reached: Start built one with the same options
			w.acc.AddError(fmt.Errorf("tail: %q: %w", path, err))
			return
		}
		fl.parser = p
	}
	w.followers[path] = fl
	w.open(fl, fromStart)
}

// open opens the file now at fl.path. A file read before under another name continues
// where it was left.
func (w *watcher) open(fl *follower, fromStart bool) {
	f, err := os.Open(fl.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		w.acc.AddError(fmt.Errorf("tail: opening %q: %w", fl.path, err))
		return
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		w.acc.AddError(fmt.Errorf("tail: %q: %w", fl.path, err))
		return
	}
	fl.f, fl.info, fl.partial, fl.last = f, st, nil, nil
	id, hasID := idOf(st)
	fl.id = id
	switch c, seen := w.consumed[id]; {
	case hasID && seen:
		fl.offset = c.offset
		delete(w.consumed, fl.id)
	case fromStart:
		fl.offset = 0
	default:
		fl.offset = st.Size()
	}
}

// check reads what was appended and handles truncation and rotation.
func (w *watcher) check(fl *follower) {
	if fl.f == nil {
		w.open(fl, true)
		if fl.f == nil {
			return
		}
	}
	if w.truncated(fl) {
		// Everything now in the file is new.
		fl.offset, fl.partial, fl.last = 0, nil, nil
	}
	// Whatever was written to the open file before a rename belongs to it: read it first.
	w.read(fl)
	st, err := os.Stat(fl.path)
	if err == nil && os.SameFile(st, fl.info) {
		return
	}
	// Rotated (renamed, then maybe created anew) or deleted: the old file is finished.
	// Only a file that still has a name can turn up again under another one.
	if old, err := fl.f.Stat(); err == nil && links(old) > 0 && fl.id != (fileID{}) {
		w.consumed[fl.id] = consumedAt{offset: fl.offset, poll: w.polls}
	}
	fl.f.Close()
	fl.f = nil
	w.open(fl, true)
	if fl.f != nil {
		w.read(fl)
	}
}

// truncated reports whether the open file is shorter than what was read, or no longer
// holds the bytes last read just before the offset.
func (w *watcher) truncated(fl *follower) bool {
	st, err := fl.f.Stat()
	if err != nil {
		return false
	}
	if st.Size() < fl.offset {
		return true
	}
	if len(fl.last) == 0 {
		return false
	}
	got := make([]byte, len(fl.last))
	n, _ := fl.f.ReadAt(got, fl.offset-int64(len(fl.last)))
	return !bytes.Equal(got[:n], fl.last)
}

// read reads from fl.offset to the end and reports the complete lines.
func (w *watcher) read(fl *follower) {
	if w.buf == nil {
		w.buf = make([]byte, readChunk)
	}
	buf := w.buf
	for {
		n, err := fl.f.ReadAt(buf, fl.offset)
		if n > 0 {
			fl.offset += int64(n)
			fl.remember(buf[:n])
			w.lines(fl, buf[:n])
		}
		if err == io.EOF || n == 0 {
			return
		}
		if err != nil {
			w.acc.AddError(fmt.Errorf("tail: reading %q: %w", fl.path, err))
			return
		}
	}
}

// remember keeps the last bytes read, see follower.last.
func (fl *follower) remember(data []byte) {
	if len(data) >= lastBytes {
		fl.last = append(fl.last[:0], data[len(data)-lastBytes:]...)
		return
	}
	fl.last = append(fl.last, data...)
	if extra := len(fl.last) - lastBytes; extra > 0 {
		fl.last = append(fl.last[:0], fl.last[extra:]...)
	}
}

// lines reports the complete lines of data, keeping an unfinished last line for later.
func (w *watcher) lines(fl *follower, data []byte) {
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		fl.partial = append(fl.partial, data...)
		if len(fl.partial) > maxLineBytes {
			w.acc.AddError(fmt.Errorf("tail: %q: a line longer than %d bytes was skipped", fl.path, maxLineBytes))
			fl.partial = nil
		}
		return
	}
	// The chunk starts where the partial line did: data ends at fl.offset.
	at := fl.offset - int64(len(data)) - int64(len(fl.partial))
	chunk := append(fl.partial, data[:end+1]...)
	fl.partial = append([]byte(nil), data[end+1:]...)
	emit := func(m morse.Metric) {
		if w.tail.PathTag != "" {
			m = m.WithTag(w.tail.PathTag, fl.path)
		}
		w.acc.AddMetric(m)
	}
	if w.influx != nil {
		res := w.influx.Parse(w.tail.filter(w.tail.decode(chunk)), emit)
		if err := res.Err(); err != nil {
			w.acc.AddError(fmt.Errorf("tail: malformed lines in %q: %w", fl.path, err))
		}
		return
	}
	w.eachLine(fl, chunk, at, emit)
}

// eachLine hands the lines of chunk, which starts at byte at of the file, to the parser
// one at a time, without their line ending, and reports the refused ones with the byte
// where their line starts.
func (w *watcher) eachLine(fl *follower, chunk []byte, at int64, emit func(morse.Metric)) {
	lp, _ := fl.parser.(parsers.LineParser)
	var refused int
	var msgs []string
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		line := chunk[:i]
		line = w.tail.filter(w.tail.decode(bytes.TrimSuffix(line, []byte("\r"))))
		var err error
		if lp != nil {
			err = lp.ParseLine(line, emit)
		} else {
			err = fl.parser.Parse(line, emit)
		}
		if err != nil {
			refused += parsers.Refused(err)
			if len(msgs) < parsers.MaxKept {
				msgs = append(msgs, fmt.Sprintf("byte %d: %v", at, err))
			}
		}
		at += int64(i + 1)
		chunk = chunk[i+1:]
	}
	if refused > 0 {
		w.acc.AddError(fmt.Errorf("tail: %d entries refused in %q: %s", refused, fl.path, strings.Join(msgs, "; ")))
	}
}

func (w *watcher) closeAll() {
	for _, fl := range w.followers {
		if fl.f != nil {
			fl.f.Close()
		}
	}
}
