// Package csv writes metrics as comma-separated values, as Telegraf's csv serializer does:
// one row per metric, with the timestamp, the measurement, the tag values in key order and
// the field values in key order,
//
//	1653643420,impression,F5,1cbbb3796fc2,false,5
//
// or, with csv_columns, the columns named there. With csv_header the first row that the
// serializer writes in its life is preceded by a header naming the columns, taken from that
// first metric, as in Telegraf. Fields are quoted as Go's encoding/csv quotes them; rows end
// in "\n" (Telegraf ends them in "\r\n" on Windows only).
package csv

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// Options are Telegraf's csv serializer options.
type Options struct {
	// TimestampFormat (csv_timestamp_format) is "unix" (the default), "unix_ms",
	// "unix_us", "unix_ns" or a Go time layout, written in UTC.
	TimestampFormat string `toml:"csv_timestamp_format"`
	// Separator (csv_separator) is the one-character column separator; "," when empty.
	Separator string `toml:"csv_separator"`
	// Header (csv_header) writes a header row before the first row.
	Header bool `toml:"csv_header"`
	// ColumnPrefix (csv_column_prefix) names tag and field columns in the header tag_KEY and
	// field_KEY instead of KEY.
	ColumnPrefix bool `toml:"csv_column_prefix"`
	// Columns (csv_columns) are the columns to write, in order: "timestamp", "name",
	// "tag.KEY" and "field.KEY". Empty means all, in the default order.
	Columns []string `toml:"csv_columns"`
}

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	var errs []error
	switch {
	case len(o.Separator) > 1:
		errs = append(errs, morse.Errorf("csv_separator", "%q: must be a single character", o.Separator))
	case o.Separator == "\"" || o.Separator == "\r" || o.Separator == "\n" || o.Separator == "\x00":
		// Telegraf takes these and fails on every write; refusing them at start says why.
		errs = append(errs, morse.Errorf("csv_separator", "%q cannot separate CSV columns", o.Separator))
	}
	switch o.TimestampFormat {
	case "", "unix", "unix_ms", "unix_us", "unix_ns":
	default:
		if layoutTime.Format(o.TimestampFormat) == o.TimestampFormat {
			errs = append(errs, morse.Errorf("csv_timestamp_format", "%q is neither unix, unix_ms, unix_us, unix_ns nor a Go time layout", o.TimestampFormat))
		}
	}
	for _, c := range o.Columns {
		if c != "timestamp" && c != "name" && !strings.HasPrefix(c, "tag.") && !strings.HasPrefix(c, "field.") {
			errs = append(errs, morse.Errorf("csv_columns", "%q: a column is \"timestamp\", \"name\", \"tag.KEY\" or \"field.KEY\"", c))
		}
	}
	return errors.Join(errs...)
}

// layoutTime is a time whose every layout element differs from the layout's own text, so
// that a format that contains one is told from plain text.
var layoutTime = time.Date(2011, 11, 13, 16, 17, 18, 123456789, time.FixedZone("", 3*3600))

// Serializer writes CSV rows. It may be used by many goroutines at once; the header is
// written once, by the first call.
type Serializer struct {
	o          Options
	sep        byte
	headerDone atomic.Bool
}

// New returns a Serializer, or the options' problems.
func New(o Options) (*Serializer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Serializer{o: o, sep: ','}
	if o.Separator != "" {
		s.sep = o.Separator[0]
	}
	if !o.Header {
		s.headerDone.Store(true)
	}
	return s, nil
}

// AppendMetric appends m's row, after the header if this is the first row.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	return s.AppendBatch(dst, []morse.Metric{m})
}

// AppendBatch appends the rows of batch, after the header if they are the first rows.
// Every metric can be written as a row, so it returns no error.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) ([]byte, error) {
	if len(batch) == 0 {
		return dst, nil
	}
	if !s.headerDone.Load() && s.headerDone.CompareAndSwap(false, true) {
		dst = s.appendHeader(dst, batch[0].Expanded())
	}
	for _, m := range batch {
		dst = s.appendRow(dst, m.Expanded())
	}
	return dst, nil
}

var _ serializers.BatchSerializer = (*Serializer)(nil)

func (s *Serializer) appendHeader(dst []byte, m morse.Metric) []byte {
	w := rowWriter{dst: dst, sep: s.sep}
	if len(s.o.Columns) > 0 {
		for _, c := range s.o.Columns {
			if s.o.ColumnPrefix {
				c = strings.ReplaceAll(c, ".", "_")
			} else {
				c = strings.TrimPrefix(strings.TrimPrefix(c, "tag."), "field.")
			}
			w.field(c)
		}
		return w.end()
	}
	w.field("timestamp")
	w.field("measurement")
	for _, t := range m.Tags() {
		w.prefixed(s.o.ColumnPrefix, "tag_", t.Key)
	}
	forSorted(m.Fields(), func(f morse.Field) { w.prefixed(s.o.ColumnPrefix, "field_", f.Key) })
	return w.end()
}

func (s *Serializer) appendRow(dst []byte, m morse.Metric) []byte {
	w := rowWriter{dst: dst, sep: s.sep}
	if len(s.o.Columns) > 0 {
		for _, c := range s.o.Columns {
			switch {
			case c == "timestamp":
				w.raw(s.appendTime(w.begin(), m.Time()))
			case c == "name":
				w.field(m.Name())
			case strings.HasPrefix(c, "tag."):
				v, _ := m.Tag(c[len("tag."):])
				w.field(v)
			default:
				v, _ := m.Field(c[len("field."):])
				w.value(v)
			}
		}
		return w.end()
	}
	w.raw(s.appendTime(w.begin(), m.Time()))
	w.field(m.Name())
	for _, t := range m.Tags() {
		w.field(t.Value)
	}
	forSorted(m.Fields(), func(f morse.Field) { w.value(f.Value) })
	return w.end()
}

// appendTime writes t in csv_timestamp_format.
func (s *Serializer) appendTime(dst []byte, t time.Time) []byte {
	switch s.o.TimestampFormat {
	case "", "unix":
		return strconv.AppendInt(dst, t.Unix(), 10)
	case "unix_ms":
		return strconv.AppendInt(dst, t.UnixNano()/1e6, 10)
	case "unix_us":
		return strconv.AppendInt(dst, t.UnixNano()/1e3, 10)
	case "unix_ns":
		return strconv.AppendInt(dst, t.UnixNano(), 10)
	}
	return appendQuotedIfNeeded(dst, t.UTC().Format(s.o.TimestampFormat), s.sep)
}
