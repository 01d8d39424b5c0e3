// Package logrotate is a log file that rotates itself, with Telegraf's semantics (its
// internal/rotate): after an interval, counted from the file's last change so that a
// restart does not postpone it, or once the file has reached a size; the old file is
// renamed to "<stem>.<YYYY-MM-DD>-<unix seconds><ext>" and a fresh one opened; then the
// oldest archives beyond a maximum are deleted. Rotation is checked when the log is written
// to, so a quiet log may rotate late, as in Telegraf.
package logrotate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Perm is the mode of the files the writer creates, Telegraf's.
const Perm = os.FileMode(0o644)

// Options say when to rotate. Zero Interval and MaxSize never rotate.
type Options struct {
	Interval time.Duration // rotate when the file is this old
	MaxSize  int64         // rotate when the file has this many bytes
	// MaxArchives is how many rotated files to keep, the oldest deleted first; -1 keeps
	// them all, 0 none.
	MaxArchives int
}

// Writer is a log file that rotates as its Options say. It is safe for concurrent use.
type Writer struct {
	path, stem, ext string
	opts            Options
	now             func() time.Time // time.Now; tests set their own clock

	mu      sync.Mutex
	f       *os.File
	size    int64
	expires time.Time
}

// Open opens (creating) the log file at path for appending, rotating it at once if it is
// already due. Its directory is created too, as Telegraf creates it.
func Open(path string, opts Options) (*Writer, error) { return open(path, opts, time.Now) }

func open(path string, opts Options, now func() time.Time) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	ext := filepath.Ext(path)
	w := &Writer{path: path, stem: strings.TrimSuffix(path, ext), ext: ext, opts: opts, now: now}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, Perm)
	if err != nil {
		return err
	}
	w.f, w.size, w.expires = f, 0, w.now().Add(w.opts.Interval)
	// An existing log's age counts from its last change, so that a restart more often
	// than the interval does not keep it from ever rotating. An empty file, such as the
	// one a rotation just made, is as old as now.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		w.size, w.expires = st.Size(), st.ModTime().Add(w.opts.Interval)
	}
	return w.rotateIfDue()
}

// Write appends p, then rotates if the file is due.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, os.ErrClosed
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err != nil {
		return n, err
	}
	return n, w.rotateIfDue()
}

// Close closes the file, after a rotation that is due.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.rotateIfDue()
	err = errors.Join(err, w.f.Close())
	w.f = nil
	return err
}

func (w *Writer) due() bool {
	return (w.opts.Interval > 0 && w.now().After(w.expires)) ||
		(w.opts.MaxSize > 0 && w.size >= w.opts.MaxSize)
}

// rotateIfDue renames a due file to its archive name and opens a fresh one. A failed
// rename leaves the log where it was, so that logging goes on; the error is returned.
func (w *Writer) rotateIfDue() error {
	if !w.due() {
		return nil
	}
	err := w.f.Close()
	if err == nil {
		now := w.now()
		err = os.Rename(w.path, w.archiveName(now.Format("2006-01-02"), strconv.FormatInt(now.Unix(), 10)))
	}
	if err == nil {
		err = w.purge()
	}
	if oerr := w.open(); oerr != nil {
		w.f = nil
		return errors.Join(err, oerr)
	}
	if err != nil {
		return fmt.Errorf("rotating the log file %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) archiveName(date, unix string) string {
	return w.stem + "." + date + "-" + unix + w.ext
}

// Archives lists the rotated files of the log, oldest first.
func (w *Writer) Archives() ([]string, error) {
	matches, err := filepath.Glob(w.archiveName("*", "*"))
	if err != nil {
		return nil, err
	}
	// The names hold the date and then the Unix time, so their order is their age while
	// the Unix time has ten digits (until 2286).
	slices.Sort(matches)
	return matches, nil
}

func (w *Writer) purge() error {
	if w.opts.MaxArchives < 0 {
		return nil
	}
	archives, err := w.Archives()
	if err != nil || len(archives) <= w.opts.MaxArchives {
		return err
	}
	var errs []error
	for _, old := range archives[:len(archives)-w.opts.MaxArchives] {
		errs = append(errs, os.Remove(old))
	}
	return errors.Join(errs...)
}

var _ io.WriteCloser = (*Writer)(nil)
