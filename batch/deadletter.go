package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/morse-agent/morse"
)

// DeadLetter receives the metrics a writer drops for good because the sink refused them
// (permanent errors, the refused part of partial writes, expired retries), so that an
// operator can inspect them and send them again (`morse replay`). Evictions and what is
// left at shutdown are counted but not dead-lettered: they are losses of capacity, not of
// refusal, and the disk buffer is what keeps them.
type DeadLetter interface {
	Write(ev DropEvent) error
}

// deadLettered reports whether a loss of reason goes to the dead letter.
func deadLettered(reason string) bool {
	return reason != morse.ReasonBufferFull && reason != morse.ReasonShutdown
}

// DeadLetterFile is a DeadLetter that appends line protocol to a file, each group of
// metrics after a comment line with the time, the output, the reason and the server's
// message. The file is created 0600 and bounded: past MaxSize it is rotated to FILE.1, and
// the previous FILE.1 is removed, its metrics counted in Removed. It is safe for concurrent
// use.
type DeadLetterFile struct {
	path    string
	maxSize int64
	encode  func(dst []byte, m morse.Metric) ([]byte, error)
	now     func() time.Time

	mu      sync.Mutex
	f       *os.File
	size    int64
	buf     []byte
	removed int64
}

// DefaultDeadLetterMaxSize bounds a dead-letter file when its size is not given.
const DefaultDeadLetterMaxSize = 64 << 20

// OpenDeadLetterFile opens path for appending, creating it 0600. encode writes one metric
// as line protocol, with its newline, such as the influx serializer's AppendMetric.
func OpenDeadLetterFile(path string, maxSize int64, encode func([]byte, morse.Metric) ([]byte, error)) (*DeadLetterFile, error) {
	if maxSize <= 0 {
		maxSize = DefaultDeadLetterMaxSize
	}
	d := &DeadLetterFile{path: path, maxSize: maxSize, encode: encode, now: time.Now}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *DeadLetterFile) open() error {
	f, err := os.OpenFile(d.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("dead letter: %w", err)
	}
	d.f, d.size = f, st.Size()
	return nil
}

// Write appends the event's metrics after a comment line that says why they were dropped.
// A partial write whose sink did not say which metrics it dropped appends the whole batch,
// and the comment says how many of them were lost.
func (d *DeadLetterFile) Write(ev DropEvent) error {
	if len(ev.Metrics) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.buf[:0]
	b = fmt.Appendf(b, "# %s output=%s reason=%s", d.now().UTC().Format(time.RFC3339Nano), ev.Output, ev.Reason)
	if ev.Partial {
		b = fmt.Appendf(b, " dropped=%d of the %d lines below; the sink did not say which", ev.Count, len(ev.Metrics))
	}
	if ev.Err != nil {
		b = fmt.Appendf(b, " error=%q", ev.Err.Error())
	}
	b = append(b, '\n')
	var encErr error
	for _, m := range ev.Metrics {
		var err error
		if b, err = d.encode(b, m); err != nil {
			encErr = errors.Join(encErr, err)
		}
	}
	d.buf = b
	if d.size > 0 && d.size+int64(len(b)) > d.maxSize {
		if err := d.rotate(); err != nil {
			return err
		}
	}
	n, err := d.f.Write(b)
	d.size += int64(n)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	return encErr
}

// rotate moves the file to FILE.1, removing the previous FILE.1 and counting its metrics.
func (d *DeadLetterFile) rotate() error {
	old := d.path + ".1"
	if n, err := countLines(old); err == nil {
		d.removed += n
	}
	if err := d.f.Close(); err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	if err := os.Rename(d.path, old); err != nil {
		return fmt.Errorf("dead letter: rotate: %w", err)
	}
	return d.open()
}

// countLines counts the metric lines of a dead-letter file: the lines that are not comments.
func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n, sc.Err()
}

// Removed is how many dead-lettered metrics rotation has removed for good.
func (d *DeadLetterFile) Removed() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.removed
}

// Close closes the file.
func (d *DeadLetterFile) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.f.Close()
}
