package batch

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/morse-agent/morse"
)

// DeadLetter receives the metrics a writer drops for good, so that an operator can inspect
// them and send them again (`morse replay`): what the sink refused (permanent errors, the
// refused part of partial writes, expired retries) and what is left at shutdown. Evictions,
// and metrics that reach a writer after its Close (a reload's hand-over), are counted but
// not dead-lettered: they happen on the path of adding metrics, in an input's goroutine,
// which must never wait for file I/O.
type DeadLetter interface {
	Write(ev DropEvent) (DeadLetterResult, error)
}

// DeadLetterResult says what became of one DropEvent's metrics, so that the writer can count
// the ones the dead letter could not keep and the ones its bound removed.
type DeadLetterResult struct {
	// Kept is how many of the event's metrics are now in the dead letter.
	Kept int
	// Failed is how many of the event's metrics are not: they could not be encoded or
	// written, or the event did not carry them.
	Failed int
	// Removed is how many metrics of earlier events the dead letter's bound removed for
	// good while it took this one.
	Removed int64
}

// DeadLetterFile is a DeadLetter that appends line protocol to a file, each group of
// metrics after a comment line with the time, the output, the reason, how many metrics
// follow and the server's message. The file is created 0600 and bounded: past MaxSize it is
// rotated to FILE.1, and the previous FILE.1 is removed, its metrics reported in
// DeadLetterResult.Removed and counted in Removed. It is safe for concurrent use, so that
// the outputs of a reload's hand-over can share one.
type DeadLetterFile struct {
	path    string
	maxSize int64
	encode  func(dst []byte, m morse.Metric) ([]byte, error)
	now     func() time.Time
	open    func(path string) (*os.File, int64, error) // openAppend; tests make it fail

	mu   sync.Mutex
	f    *os.File // nil once closed
	size int64
	buf  []byte // a group: its comment line and body
	body []byte // the encoded metrics of a group
	// cur and prev count the metrics in FILE and FILE.1, as written, so that a rotation
	// knows what it removes without reading the file; -1 for a file this process did not
	// write whole (it is counted by reading it, once, when its metrics are removed).
	cur, prev int64
	// stray is set while f is at FILE.1: a rotation renamed it there but could not create
	// FILE again. The next rotation only creates FILE.
	stray   bool
	removed int64
}

// DefaultDeadLetterMaxSize bounds a dead-letter file when its size is not given.
const DefaultDeadLetterMaxSize = 64 << 20

// OpenDeadLetterFile opens path for appending, creating it 0600. encode writes one metric
// as line protocol, with its newline, such as the influx serializer's AppendMetric.
func OpenDeadLetterFile(path string, maxSize int64, encode func([]byte, morse.Metric) ([]byte, error)) (*DeadLetterFile, error) {
	d := &DeadLetterFile{path: path, encode: encode, now: time.Now, open: openAppend, prev: -1}
	d.SetMaxSize(maxSize)
	f, size, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	d.f, d.size = f, size
	if size > 0 {
		d.cur = -1 // written by an earlier run
	}
	return d, nil
}

// SetMaxSize changes the bound, for a reload that changed dead_letter_max_size of a file
// that is kept open; zero or less takes DefaultDeadLetterMaxSize.
func (d *DeadLetterFile) SetMaxSize(maxSize int64) {
	if maxSize <= 0 {
		maxSize = DefaultDeadLetterMaxSize
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.maxSize = maxSize
}

func openAppend(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("dead letter: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("dead letter: %w", err)
	}
	return f, st.Size(), nil
}

// errDeadLetterClosed is the error of a Write after Close.
var errDeadLetterClosed = errors.New("dead letter: file is closed")

// Write appends the event's metrics after a comment line that says why they were dropped
// and how many follow. A partial write whose sink did not say which metrics it dropped
// appends the whole batch, and the comment says how many of them were lost. A metric that
// cannot be encoded is left out and the comment says how many are missing. A group is
// written whole or not at all, so that the file stays line protocol.
func (d *DeadLetterFile) Write(ev DropEvent) (DeadLetterResult, error) {
	missing := 0
	if !ev.Partial && ev.Count > len(ev.Metrics) {
		missing = ev.Count - len(ev.Metrics) // known only by their number
	}
	if len(ev.Metrics) == 0 && missing == 0 {
		return DeadLetterResult{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return DeadLetterResult{Failed: len(ev.Metrics) + missing}, errDeadLetterClosed
	}
	body, kept, encErr := d.encodeAll(d.body[:0], ev.Metrics)
	d.body = body
	missing += len(ev.Metrics) - kept
	b := d.header(body, ev, kept, missing, encErr)
	d.buf = b
	if encErr != nil {
		encErr = fmt.Errorf("dead letter: %d metrics could not be encoded, the first: %w", len(ev.Metrics)-kept, encErr)
	}
	var res DeadLetterResult
	var rotErr error
	if d.size > 0 && d.size+int64(len(b)) > d.maxSize {
		res.Removed, rotErr = d.rotate()
	}
	if err := d.append(b, kept); err != nil {
		return DeadLetterResult{Failed: kept + missing, Removed: res.Removed}, errors.Join(rotErr, err, encErr)
	}
	res.Kept, res.Failed = kept, missing
	return res, errors.Join(rotErr, encErr)
}

// encodeAll encodes ms and returns the encoded metrics, how many there are, and the first
// error of those it left out: one message says why, the count says how many.
func (d *DeadLetterFile) encodeAll(body []byte, ms []morse.Metric) (_ []byte, kept int, first error) {
	for _, m := range ms {
		n := len(body)
		var err error
		if body, err = d.encode(body, m); err != nil {
			body = body[:n] // nothing of a metric that failed halfway
			first = cmp.Or(first, err)
			continue
		}
		kept++
	}
	return body, kept, first
}

// header returns the comment line of a group followed by body, in d.buf.
func (d *DeadLetterFile) header(body []byte, ev DropEvent, kept, missing int, encErr error) []byte {
	b := fmt.Appendf(d.buf[:0], "# %s output=%s reason=%s metrics=%d",
		d.now().UTC().Format(time.RFC3339Nano), ev.Output, ev.Reason, kept)
	if ev.Partial {
		b = fmt.Appendf(b, " dropped=%d of the batch's %d metrics; the sink did not say which", ev.Count, len(ev.Metrics))
	}
	if missing > 0 {
		b = fmt.Appendf(b, " missing=%d", missing)
	}
	if encErr != nil {
		b = fmt.Appendf(b, " encode_error=%q", encErr.Error())
	}
	if ev.Err != nil {
		b = fmt.Appendf(b, " error=%q", ev.Err.Error())
	}
	b = append(b, '\n')
	return append(b, body...)
}

// append writes one group whole. A short write is cut off again, so that a half line never
// runs into the next group; the group's metrics are then not in the file.
func (d *DeadLetterFile) append(b []byte, metrics int) error {
	n, err := d.f.Write(b)
	if err == nil {
		d.size += int64(n)
		if d.cur >= 0 {
			d.cur += int64(metrics)
		}
		return nil
	}
	if n > 0 {
		if terr := d.f.Truncate(d.size); terr != nil {
			// The file now ends with a piece of a group: count it by reading it.
			d.size += int64(n)
			d.cur = -1
		}
	}
	return fmt.Errorf("dead letter: %w", err)
}

// rotate moves the file to FILE.1, replacing the previous FILE.1, and returns how many
// metrics that removed. The file is renamed while it is open, so that if anything fails the
// writer keeps appending to the file it has: a failed rotation leaves the file over its
// bound but loses nothing and counts nothing twice, and is tried again at the next write.
func (d *DeadLetterFile) rotate() (removed int64, err error) {
	if !d.stray {
		old := d.path + ".1"
		n, err := d.prevCount(old)
		if err != nil {
			return 0, fmt.Errorf("dead letter: rotate: count %s: %w", old, err)
		}
		if err := os.Rename(d.path, old); err != nil {
			return 0, fmt.Errorf("dead letter: rotate: %w", err)
		}
		d.removed, removed = d.removed+n, n
		d.stray = true // f is at FILE.1 now, its metrics still counted in cur
	}
	f, size, err := d.open(d.path)
	if err != nil {
		return removed, fmt.Errorf("dead letter: rotate: %w", err)
	}
	_ = d.f.Close() // nothing is buffered, so a close error loses nothing
	d.f, d.size, d.stray = f, size, false
	d.prev, d.cur = d.cur, 0
	if size > 0 {
		d.cur = -1 // another process created it meanwhile
	}
	return removed, nil
}

// prevCount is how many metrics FILE.1 holds, read from the file if this process did not
// write it, and kept so that a rotation that fails and is tried again reads it only once.
func (d *DeadLetterFile) prevCount(path string) (int64, error) {
	if d.prev >= 0 {
		return d.prev, nil
	}
	n, err := countFileRecords(path)
	if errors.Is(err, fs.ErrNotExist) {
		n, err = 0, nil
	}
	if err != nil {
		return 0, err
	}
	d.prev = n
	return n, nil
}

func countFileRecords(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return countRecords(bufio.NewReader(f))
}

// countRecords counts the metrics of line protocol: the lines that are neither blank nor
// comments, where a newline inside a quoted string field value, which line protocol keeps
// raw, does not start a line. A metric that a serializer split over several lines counts
// once per line, as it would be read back.
func countRecords(r io.ByteReader) (int64, error) {
	var n int64
	lp := lpScanner{}
	for {
		c, err := r.ReadByte()
		if err == io.EOF {
			return n + lp.end(), nil
		}
		if err != nil {
			return n, err
		}
		n += lp.step(c)
	}
}

// lpScanner follows line protocol byte by byte, far enough to tell where a line ends: a
// backslash escapes the next byte outside strings as inside them, and a field value that
// starts with a double quote is a string until the next unescaped double quote.
type lpScanner struct {
	started bool // the line has begun: a metric, or a comment if comment is set
	comment bool
	escaped bool
	fields  bool // past the first unescaped space: the field set
	value   bool // in the field set, past a key's '='
	inStr   bool
	valLen  int // bytes of the current field value so far
}

// step takes one byte and returns 1 when it ends a metric's line.
func (s *lpScanner) step(c byte) int64 {
	if s.escaped {
		s.escaped = false
		s.valLen++
		return 0
	}
	if s.inStr {
		s.inStr, s.escaped = c != '"', c == '\\'
		return 0
	}
	if c == '\n' {
		return s.end()
	}
	if !s.started {
		if c == ' ' || c == '\t' || c == '\r' {
			return 0
		}
		s.started, s.comment = true, c == '#'
	}
	if s.comment {
		return 0
	}
	switch {
	case c == '\\':
		s.escaped = true
	case !s.fields:
		s.fields = c == ' '
	case !s.value:
		s.value, s.valLen = c == '=', 0
		return 0
	case c == ',' || c == ' ':
		s.value = false
	case c == '"' && s.valLen == 0:
		s.inStr = true
	}
	s.valLen++
	return 0
}

// end ends a line and returns 1 if it was a metric's.
func (s *lpScanner) end() int64 {
	metric := s.started && !s.comment
	*s = lpScanner{}
	if metric {
		return 1
	}
	return 0
}

// Removed is how many dead-lettered metrics rotation has removed for good since the file
// was opened, whichever run wrote them.
func (d *DeadLetterFile) Removed() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.removed
}

// Close closes the file. A Write after Close keeps nothing and says so.
func (d *DeadLetterFile) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}
