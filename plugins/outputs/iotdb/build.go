package iotdb

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// settings are the options the serialization reads, checked by Validate.
type settings struct {
	database     string // the prefix of names that do not start with root.
	precision    time.Duration
	tagsAsFields bool
	uint64To     string
	sanitize     string // "", "0.13" or "1.x"
}

// builder turns a batch into tablets, one or more per device, in one pass over the batch.
// It is reused from write to write, so that its buffers, columns and device map are
// allocated once: a batch costs an allocation per new device, none per metric.
type builder struct {
	set      settings
	tablets  []tablet
	n        int
	byDevice map[string]int // the device's first tablet
	dev      []byte
	row      []value
	failed   []int // positions of the metrics that could not be serialized
	firstErr error
}

// reset empties the builder for the next batch.
func (b *builder) reset() {
	b.n = 0
	clear(b.byDevice)
	b.failed = b.failed[:0]
	b.firstErr = nil
}

// build sorts batch into tablets. Metrics that IoTDB could never take (no storable value,
// a tag value Telegraf refuses) are left out and listed in failed.
func (b *builder) build(batch []morse.Metric) {
	b.reset()
	if b.byDevice == nil {
		b.byDevice = map[string]int{}
	}
	for pos, m := range batch {
		if err := b.add(pos, m); err != nil {
			b.failed = append(b.failed, pos)
			if b.firstErr == nil {
				b.firstErr = fmt.Errorf("metric %q: %w", m.Name(), err)
			}
		}
	}
}

func (b *builder) add(pos int, m morse.Metric) error {
	if err := b.device(m); err != nil {
		return err
	}
	b.row = b.values(b.row[:0], m)
	if len(b.row) == 0 {
		return errNoValues
	}
	t := b.tabletFor()
	t.add(pos, b.timestamp(m.Time()), b.row)
	return nil
}

// tabletFor returns the first tablet of the device in b.dev that takes b.row as it is,
// making it when there is none.
func (b *builder) tabletFor() *tablet {
	i, ok := b.byDevice[string(b.dev)] // no allocation: a lookup by the bytes
	if !ok {
		i = b.newTablet(string(b.dev))
		b.byDevice[b.tablets[i].device] = i
		return &b.tablets[i]
	}
	for {
		t := &b.tablets[i]
		if t.fits(b.row) {
			return t
		}
		if t.next < 0 {
			t.next = b.newTablet(t.device)
			return &b.tablets[t.next]
		}
		i = t.next
	}
}

func (b *builder) newTablet(device string) int {
	if b.n == len(b.tablets) {
		b.tablets = append(b.tablets, tablet{})
	}
	b.tablets[b.n].reset(device)
	b.n++
	return b.n - 1
}

// list is the tablets of the last build, each device's in order.
func (b *builder) list() []tablet { return b.tablets[:b.n] }

// values appends m's values: its fields (NaN and infinities left out, as JSON has no word
// for them), and with convert_tags_to = "fields" its tags as TEXT.
func (b *builder) values(row []value, m morse.Metric) []value {
	for _, f := range m.Fields() {
		v := f.Value
		typ := typeDouble
		switch v.Type() {
		case morse.TypeFloat:
			if !finite(v.Float()) {
				continue
			}
		case morse.TypeInt:
			typ = typeInt64
		case morse.TypeUint:
			v, typ = b.convertUint(v.Uint())
		case morse.TypeBool:
			typ = typeBoolean
		default:
			typ = typeText
		}
		row = append(row, value{name: f.Key, typ: typ, v: v})
	}
	if b.set.tagsAsFields {
		for _, t := range m.Tags() {
			row = append(row, value{name: t.Key, typ: typeText, v: morse.String(t.Value)})
		}
	}
	return row
}

// convertUint is uint64_conversion: IoTDB has no unsigned type.
func (b *builder) convertUint(u uint64) (morse.Value, string) {
	switch b.set.uint64To {
	case "text":
		return morse.Uint(u), typeText
	case "int64":
		return morse.Int(int64(u)), typeInt64 // wraps past MaxInt64, as Telegraf's does
	}
	return morse.Int(int64(min(u, math.MaxInt64))), typeInt64
}

// timestamp is t in timestamp_precision.
func (b *builder) timestamp(t time.Time) int64 {
	switch b.set.precision {
	case time.Second:
		return t.Unix()
	case time.Millisecond:
		return t.UnixMilli()
	case time.Microsecond:
		return t.UnixMicro()
	}
	return t.UnixNano()
}

// device writes m's device path into b.dev: its name, under database unless it starts with
// root., and with convert_tags_to = "device_id" one level per tag value, in the order of
// the tags' keys, as Telegraf's output builds it.
func (b *builder) device(m morse.Metric) error {
	name := m.Name()
	b.dev = b.dev[:0]
	if name != "root" && !strings.HasPrefix(name, "root.") {
		b.dev = append(b.dev, b.set.database...)
		b.dev = append(b.dev, '.')
	}
	b.dev = append(b.dev, name...)
	if b.set.tagsAsFields {
		return nil
	}
	for _, t := range m.Tags() {
		b.dev = append(b.dev, '.')
		var err error
		if b.dev, err = b.appendLevel(b.dev, t.Value); err != nil {
			return fmt.Errorf("tag %q: %w", t.Key, err)
		}
	}
	return nil
}

var (
	errRootTag     = errors.New("cannot use 'root' as a tag value: IoTDB reserves it for the start of a path")
	errBacktickTag = errors.New("cannot use ` in a tag value, except around the whole of it")
)

// appendLevel appends a tag value as a level of a path, quoted with backticks when
// sanitize_tag says IoTDB would not take it bare, as Telegraf's validateTag does.
func (b *builder) appendLevel(dst []byte, v string) ([]byte, error) {
	if v == "root" {
		return dst, errRootTag
	}
	if strings.IndexByte(v, '`') >= 0 {
		inner := ""
		if len(v) >= 2 && v[0] == '`' && v[len(v)-1] == '`' {
			inner = v[1 : len(v)-1]
		}
		if inner == "" || strings.IndexByte(inner, '`') >= 0 {
			return dst, errBacktickTag
		}
		return append(dst, v...), nil
	}
	if needsQuotes(b.set.sanitize, v) {
		dst = append(dst, '`')
		dst = append(dst, v...)
		return append(dst, '`'), nil
	}
	return append(dst, v...), nil
}

// needsQuotes is Telegraf's sanitize_tag: for IoTDB 1.x (and 2.x) a value with a character
// outside [0-9a-zA-Z_] or of digits only; for 0.13 one with a character outside
// [0-9a-zA-Z_:@#${}]; never when sanitize_tag is unset.
func needsQuotes(mode, v string) bool {
	if mode == "" {
		return false
	}
	digits := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		word := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		digits = digits && c >= '0' && c <= '9'
		if !word && (mode != "0.13" || strings.IndexByte(":@#${}", c) < 0) {
			return true
		}
	}
	return mode != "0.13" && digits
}
