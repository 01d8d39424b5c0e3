// Package file is the file output: it writes metrics as line protocol to files or to the
// standard streams, with Telegraf's outputs.file options.
package file

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/influx"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Send metrics to files or to the standard streams, as InfluxDB line protocol"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "file",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// File writes each batch to every configured file with one write call per file. The TOML
// keys are Telegraf's, so a Telegraf [[outputs.file]] table decodes unchanged; options that
// morse does not implement are accepted at their defaults and refused otherwise, so that a
// config never silently means something else.
type File struct {
	// Files are the paths to append to; "stdout" and "stderr" name the standard streams.
	Files []string `toml:"files"`
	// UseBatchFormat is Telegraf's switch between per-metric and batch serialization. Line
	// protocol is the same either way, so it changes nothing.
	UseBatchFormat bool `toml:"use_batch_format"`

	// The rotation options are Telegraf's. morse does not rotate; they are accepted at
	// their defaults and refused otherwise.
	RotationInterval    morse.Duration `toml:"rotation_interval"`
	RotationMaxSize     morse.Size     `toml:"rotation_max_size"`
	RotationMaxArchives int            `toml:"rotation_max_archives"`
	// CompressionAlgorithm is "", "zstd", "gzip" or "zlib"; CompressionLevel is the
	// algorithm's level, -1 (the default) for its default. See newEncoder.
	CompressionAlgorithm string `toml:"compression_algorithm"`
	CompressionLevel     int    `toml:"compression_level"`

	// DataFormat must be "influx" (or empty, meaning the same).
	DataFormat string `toml:"data_format"`
	// InfluxMaxLineBytes splits longer lines; 0 means no limit. See influx.Options.
	InfluxMaxLineBytes int `toml:"influx_max_line_bytes"`
	// InfluxSortFields writes fields in ascending order of their keys.
	InfluxSortFields bool `toml:"influx_sort_fields"`
	// InfluxUintSupport writes unsigned integers as 42u instead of clamped 42i.
	InfluxUintSupport bool `toml:"influx_uint_support"`
	// InfluxOmitTimestamp writes lines without a timestamp.
	InfluxOmitTimestamp bool `toml:"influx_omit_timestamp"`

	// Precision is the agent's precision, set by the agent rather than the config. Times are
	// truncated to it and still written in nanoseconds, as Telegraf's file output does, so
	// that whatever reads the file needs no precision setting of its own.
	Precision morse.Duration `toml:"-"`

	// Stdout replaces the process's standard output for "stdout" when set; tests and
	// programs that embed morse use it to capture the output.
	Stdout io.Writer `toml:"-"`
	// Stderr does the same for "stderr".
	Stderr io.Writer `toml:"-"`

	mu       sync.Mutex
	serStats *selfstat.SerializerStats // internal_serializer; nil without an agent
	ser      *influx.Serializer
	writers  []target
	buf      []byte
	sorted   []morse.Field
	enc      encoder      // nil without compression
	zbuf     bytes.Buffer // the compressed batch, reused
}

// target is one opened destination.
type target struct {
	name string
	w    io.Writer
	c    io.Closer // nil for the standard streams, which are not ours to close
}

// New returns a File output with Telegraf's defaults: line protocol to stdout.
func New() *File {
	return &File{Files: []string{"stdout"}, DataFormat: "influx", RotationMaxArchives: 5, CompressionLevel: -1}
}

// SetPrecision sets the agent's precision; see the Precision field.
func (f *File) SetPrecision(d time.Duration) { f.Precision = morse.Duration(d) }

// Validate checks the options after decoding.
func (f *File) Validate() error {
	var errs []error
	if len(f.Files) == 0 {
		errs = append(errs, morse.Errorf("files", "at least one file is needed, such as \"stdout\""))
	}
	for i, name := range f.Files {
		switch {
		case strings.TrimSpace(name) == "":
			errs = append(errs, morse.Errorf("files", "entry %d is empty", i+1))
		case slices.Index(f.Files, name) < i:
			errs = append(errs, morse.Errorf("files", "%q is listed twice; every metric would be written to it twice", name))
		}
	}
	if f.DataFormat != "" && f.DataFormat != "influx" {
		errs = append(errs, morse.Errorf("data_format", "%q is not supported: the file output writes only \"influx\" (line protocol)", f.DataFormat))
	}
	if f.InfluxMaxLineBytes < 0 {
		errs = append(errs, morse.Errorf("influx_max_line_bytes", "must not be negative (0 means no limit), got %d", f.InfluxMaxLineBytes))
	}
	const rotate = "file rotation is not supported; leave it unset and rotate with logrotate's copytruncate"
	if f.RotationInterval != 0 {
		errs = append(errs, morse.Errorf("rotation_interval", "%s", rotate))
	}
	if f.RotationMaxSize != 0 {
		errs = append(errs, morse.Errorf("rotation_max_size", "%s", rotate))
	}
	if f.RotationMaxArchives < -1 {
		errs = append(errs, morse.Errorf("rotation_max_archives", "must be -1 (keep all) or more, got %d", f.RotationMaxArchives))
	}
	if _, err := newEncoder(f.CompressionAlgorithm, f.CompressionLevel); err != nil {
		key := "compression_level"
		if f.CompressionLevel < 0 {
			key = "compression_algorithm"
		}
		errs = append(errs, morse.Errorf(key, "%v", err))
	}
	return errors.Join(errs...)
}

// Connect opens every file for appending, creating it with mode 0644 if needed. If one cannot
// be opened, those already opened are closed again and the error names the file.
func (f *File) Connect(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeLocked()
	f.ser = influx.New(influx.Options{UintSupport: f.InfluxUintSupport, MaxLineBytes: f.InfluxMaxLineBytes})
	enc, err := newEncoder(f.CompressionAlgorithm, f.CompressionLevel)
	if err != nil {
		return err
	}
	f.enc = enc
	for _, name := range f.Files {
		t, err := f.open(name)
		if err != nil {
			f.closeLocked()
			return err
		}
		f.writers = append(f.writers, t)
	}
	return nil
}

func (f *File) open(name string) (target, error) {
	switch name {
	case "stdout":
		return target{name: name, w: orDefault(f.Stdout, os.Stdout)}, nil
	case "stderr":
		return target{name: name, w: orDefault(f.Stderr, os.Stderr)}, nil
	}
	fh, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return target{}, fmt.Errorf("file: open %q: %w", name, err)
	}
	return target{name: name, w: fh, c: fh}, nil
}

func orDefault(w io.Writer, def *os.File) io.Writer {
	if w != nil {
		return w
	}
	return def
}

// Write serializes the batch into one reused buffer and writes it to every file.
//
// SetSelfStats implements morse.SelfStatsSetter: the agent hands over its registry, where
// the output counts what it serializes (internal_serializer, type=influx), as Telegraf's
// outputs with a data_format do.
func (f *File) SetSelfStats(r *selfstat.Registry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serStats = selfstat.NewSerializerStats(r, "influx")
}

// A metric that cannot be written as line protocol (no writable field, an empty name) is
// dropped and reported in a *morse.PartialWriteError, or a permanent error when no metric of
// the batch could be written. A failed file write is retryable; the files that did take the
// batch get it again on the retry, as with Telegraf.
func (f *File) Write(ctx context.Context, batch []morse.Metric) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ser == nil {
		return errors.New("file: Write called before Connect or after Close")
	}
	buf := f.buf[:0]
	dropped := 0
	var firstErr error
	start := time.Now()
	for _, m := range batch {
		var err error
		if buf, err = f.ser.AppendMetric(buf, f.prepare(m)); err != nil {
			dropped++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	f.buf = buf
	f.serStats.Serialized(len(batch), len(buf), time.Since(start))
	f.serStats.Failed(dropped)
	if len(buf) > 0 && f.enc != nil {
		f.zbuf.Reset()
		if err := f.enc.encode(&f.zbuf, buf); err != nil {
			return fmt.Errorf("file: compressing: %w", err)
		}
		buf = f.zbuf.Bytes()
	}
	if len(buf) > 0 {
		var errs []error
		for _, t := range f.writers {
			if _, err := t.w.Write(buf); err != nil {
				errs = append(errs, fmt.Errorf("file: write %s: %w", t.name, err))
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	switch {
	case dropped == 0:
		return nil
	case dropped == len(batch):
		return firstErr
	}
	return &morse.PartialWriteError{Dropped: dropped, Reason: morse.ReasonSerialize, Err: firstErr}
}

// prepare applies the options that change a metric before it is serialized. Metric is a
// value, so this changes the copy that is written and nothing that other outputs see.
func (f *File) prepare(m morse.Metric) morse.Metric {
	switch {
	case f.InfluxOmitTimestamp:
		m = m.WithTime(time.Time{})
	case f.Precision > 1:
		m = m.WithTime(m.Time().Truncate(time.Duration(f.Precision)))
	}
	if f.InfluxSortFields {
		m = influx.SortFields(m, &f.sorted)
	}
	return m
}

// Close closes the files; the standard streams stay open. A Write after Close fails rather
// than lose the batch silently.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ser = nil
	return f.closeLocked()
}

func (f *File) closeLocked() error {
	var errs []error
	for _, t := range f.writers {
		if t.c != nil {
			if err := t.c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("file: close %s: %w", t.name, err))
			}
		}
	}
	f.writers = nil
	return errors.Join(errs...)
}
