package iotdb

import (
	"errors"
	"fmt"
	"slices"
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
// It is reused from write to write, and keeps its devices, their tablets and the tablets'
// columns from batch to batch: the next batch finds a device's columns in the same order, so
// that a field's column is where the field is in the metric, and a batch costs no allocation
// once its devices have been seen. Beyond maxKeptDevices devices it starts afresh.
type builder struct {
	set        settings
	tablets    []tablet
	byDevice   map[string]int // the device's first tablet, by its path
	byIdentity map[string]int // the same by what made it (devices.go)
	key        []byte
	kept       settings // the settings the devices were made with
	order      []int    // this batch's tablets, in the order the batch first used them
	ptrs       []*tablet
	gen        uint64 // the batch: a tablet whose gen differs holds an earlier batch's rows
	dev        []byte
	row        row
	line       lineDecoder
	failed     []int // positions of the metrics that could not be serialized
	firstErr   error
}

// maxKeptDevices bounds the devices (and their buffers) a builder keeps between batches.
const maxKeptDevices = 4096

// reset empties the builder for the next batch.
func (b *builder) reset() {
	b.gen++
	if b.byDevice == nil || len(b.byIdentity) > maxKeptDevices || b.set != b.kept {
		b.byDevice, b.byIdentity, b.tablets, b.kept = map[string]int{}, map[string]int{}, nil, b.set
	}
	b.order = b.order[:0]
	b.failed = b.failed[:0]
	b.firstErr = nil
}

// build sorts batch into tablets. Metrics that IoTDB could never take (no storable value,
// a tag value Telegraf refuses) are left out and listed in failed.
func (b *builder) build(batch []morse.Metric) {
	b.reset()
	for pos := range batch {
		m := &batch[pos] // a Metric is 112 bytes: not copied for every call
		if err := b.add(pos, m); err != nil {
			b.failed = append(b.failed, pos)
			if b.firstErr == nil {
				b.firstErr = fmt.Errorf("metric %q: %w", m.Name(), err)
			}
		}
	}
	b.ptrs = b.ptrs[:0]
	for _, i := range b.order {
		b.ptrs = append(b.ptrs, &b.tablets[i])
	}
}

func (b *builder) add(pos int, m *morse.Metric) error {
	if lt, ok := m.Line(); ok {
		if view, ok := b.line.decode(lt.Text, m.Time()); ok {
			m = &view // text that does not decode is expanded by the calls below
		}
	}
	dev, err := b.deviceOf(m)
	if err != nil {
		return err
	}
	if b.row.set(m, &b.set) == 0 {
		return errNoValues
	}
	b.row.idx = slices.Grow(b.row.idx[:0], b.row.len())[:b.row.len()]
	t := b.tabletFor(dev)
	t.add(pos, b.timestamp(m.Time()), &b.row)
	return nil
}

// tabletFor returns the first tablet of the device whose first tablet is i that takes b.row
// as it is, making it when there is none, with the columns of b.row's values in b.row.idx.
func (b *builder) tabletFor(i int) *tablet {
	for {
		t := &b.tablets[i]
		if t.gen != b.gen {
			t.reset(b.gen)
			b.order = append(b.order, i)
		}
		if t.match(&b.row) {
			return t
		}
		if t.next < 0 {
			n := b.newTablet(t.device) // moves b.tablets: t is stale after it
			b.tablets[i].next = n
		}
		i = b.tablets[i].next
	}
}

func (b *builder) newTablet(device string) int {
	b.tablets = append(b.tablets, tablet{device: device, next: -1})
	return len(b.tablets) - 1
}

// list is the tablets of the last build, each device's in order.
func (b *builder) list() []*tablet { return b.ptrs }

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
func (b *builder) device(m *morse.Metric) error {
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
// sanitize_tag says IoTDB would not take it bare, as Telegraf's validateTag does. One pass
// over the value finds all it needs to know (levelClasses).
func (b *builder) appendLevel(dst []byte, v string) ([]byte, error) {
	if v == "root" {
		return dst, errRootTag
	}
	all, some := uint8(0xff), uint8(0)
	for i := 0; i < len(v); i++ {
		c := levelClass[v[i]]
		all &= c
		some |= c
	}
	if some&classTick != 0 {
		inner := ""
		if len(v) >= 2 && v[0] == '`' && v[len(v)-1] == '`' {
			inner = v[1 : len(v)-1]
		}
		if inner == "" || strings.IndexByte(inner, '`') >= 0 {
			return dst, errBacktickTag
		}
		return append(dst, v...), nil
	}
	if needsQuotes(b.set.sanitize, all) {
		dst = append(dst, '`')
		dst = append(dst, v...)
		return append(dst, '`'), nil
	}
	return append(dst, v...), nil
}

// The classes of a byte in a tag value, as bits: a word character ([0-9a-zA-Z_]), one
// that IoTDB 0.13 takes bare (a word character or one of :@#${}), a digit, a backtick.
const (
	classWord uint8 = 1 << iota
	classWord013
	classDigit
	classTick
)

var levelClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= '0' && c <= '9':
			t[c] = classWord | classWord013 | classDigit
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
			t[c] = classWord | classWord013
		case strings.IndexByte(":@#${}", byte(c)) >= 0:
			t[c] = classWord013
		case c == '`':
			t[c] = classTick
		}
	}
	return t
}()

// needsQuotes is Telegraf's sanitize_tag, given the classes every byte of a value has in
// common (all): for IoTDB 1.x (and 2.x) a value with a character outside [0-9a-zA-Z_] or of
// digits only; for 0.13 one with a character outside [0-9a-zA-Z_:@#${}]; never when
// sanitize_tag is unset.
func needsQuotes(mode string, all uint8) bool {
	switch mode {
	case "":
		return false
	case "0.13":
		return all&classWord013 == 0
	}
	return all&classWord == 0 || all&classDigit != 0
}
