// Package file is the file output: it writes metrics to files or to the standard streams in
// any data_format that morse serializes (line protocol by default), with Telegraf's
// outputs.file options.
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
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Send metrics to files or to the standard streams"

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
	// UseBatchFormat writes each batch in the format's batch form where it has one
	// (json's {"metrics":[...]}, prometheus's families over the whole batch, csv's one
	// header), as Telegraf's use_batch_format does; line protocol is the same either way.
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

	// Config is data_format and the options of each format, with Telegraf's keys.
	dataformat.Config

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
	ser      serializers.Serializer
	writers  []target
	buf      []byte
	prepared []morse.Metric // the batch with its times truncated, reused
	enc      encoder        // nil without compression
	zbuf     bytes.Buffer   // the compressed batch, reused
}

// target is one opened destination.
type target struct {
	name string
	w    io.Writer
	c    io.Closer // nil for the standard streams, which are not ours to close
}

// New returns a File output with Telegraf's defaults: line protocol to stdout.
func New() *File {
	return &File{Files: []string{"stdout"}, Config: dataformat.Config{DataFormat: "influx"}, RotationMaxArchives: 5, CompressionLevel: -1}
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
	errs = append(errs, f.Config.Validate())
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
	ser, err := f.Config.New()
	if err != nil {
		return err
	}
	f.ser = ser
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

// SetSelfStats implements morse.SelfStatsSetter: the agent hands over its registry, where
// the output counts what it serializes (internal_serializer, tagged with the data_format),
// as Telegraf's outputs with a data_format do.
func (f *File) SetSelfStats(r *selfstat.Registry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serStats = selfstat.NewSerializerStats(r, f.FormatName())
}

// WritesLines tells the agent that line metrics (morse.NewLineMetric) may come as they
// are: the influx serializer writes their text. Other formats take them expanded.
func (f *File) WritesLines() bool { return f.Config.WritesLines() }

// Write serializes the batch into one reused buffer and writes it to every file.
//
// A metric that the format cannot write (no writable field, an empty name) is dropped and reported in a *morse.PartialWriteError, or a permanent error when no metric of
// the batch could be written. A failed file write is retryable; the files that did take the
// batch get it again on the retry, as with Telegraf.
func (f *File) Write(ctx context.Context, batch []morse.Metric) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ser == nil {
		return errors.New("file: Write called before Connect or after Close")
	}
	start := time.Now()
	buf, serErr := serializers.Append(f.ser, f.buf[:0], f.prepare(batch), f.UseBatchFormat)
	f.buf = buf
	dropped := serializers.Dropped(serErr)
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
	return serializers.Result(serErr, len(batch))
}

// prepare truncates the metrics' times to the agent's precision. Metric is a value, so
// this changes copies, in a slice the output reuses, and nothing that other outputs see.
func (f *File) prepare(batch []morse.Metric) []morse.Metric {
	if f.Precision <= 1 {
		return batch
	}
	f.prepared = f.prepared[:0]
	for _, m := range batch {
		f.prepared = append(f.prepared, m.WithTime(m.Time().Truncate(time.Duration(f.Precision))))
	}
	return f.prepared
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
