package questdb

import (
	"strings"

	"github.com/morse-agent/morse"
)

// shape is the keys of the last metric of a write that passed every name check, and the
// check against the learned column types when there was one. The metrics of one source come
// with the same table, tag keys and field keys, of the same types, line after line; a
// metric of the same shape passes the same checks, so only its values and time are checked.
// That takes the name checks, which read every byte of every key, off the hot path.
//
// The keys are held as they are written: substrings of the last line's text for a line
// metric, the metric's own strings otherwise. A shape lives for one write, so they are
// never held past the batch they came from.
type shape struct {
	valid  bool
	line   bool // whether it came from a line metric, whose keys are escaped text
	table  string
	tags   []string
	fields []string
	types  []string // the ILP type of each field, as protocolType and textType name them
}

func (sh *shape) reset() {
	sh.valid = false
	sh.tags, sh.fields, sh.types = sh.tags[:0], sh.fields[:0], sh.types[:0]
}

// check is checkMetric and, when sch is not nil, sch.check, with the shortcut above.
func (sh *shape) check(m morse.Metric, maxLen int, keys *[]string, sch *schema) *LineError {
	if t := m.Time(); !t.IsZero() && t.UnixNano() < 0 {
		return &LineError{Reason: ReasonUnsupportedValue, Err: errBeforeEpoch}
	}
	if lt, ok := m.Line(); ok {
		if match, e := sh.matchLine(lt); match {
			return e
		}
	} else if match, e := sh.matchMetric(m); match {
		return e
	}
	e := checkMetric(m, maxLen, keys)
	if e == nil && sch != nil {
		e = sch.check(m)
	}
	if e == nil {
		sh.record(m)
	}
	return e
}

// matchMetric reports whether m has the shape, and if so checks its values.
func (sh *shape) matchMetric(m morse.Metric) (bool, *LineError) {
	if !sh.valid || sh.line || m.Name() != sh.table {
		return false, nil
	}
	n := 0
	for _, t := range m.Tags() {
		if t.Key == "" || t.Value == "" {
			continue // the serializer leaves it out
		}
		if n == len(sh.tags) || sh.tags[n] != t.Key {
			return false, nil
		}
		n++
	}
	fields := m.Fields()
	if n != len(sh.tags) || len(fields) != len(sh.fields) {
		return false, nil
	}
	for i, f := range fields {
		if f.Key != sh.fields[i] || protocolType(f.Value) != sh.types[i] {
			return false, nil
		}
	}
	for _, f := range fields {
		if err := checkValue(f.Value); err != nil {
			return true, valueError(f.Key, err)
		}
	}
	return true, nil
}

// matchLine reports whether the line has the shape, and if so checks its values.
func (sh *shape) matchLine(lt morse.LineText) (bool, *LineError) {
	if !sh.valid || !sh.line {
		return false, nil
	}
	if strings.IndexByte(lt.Text, '\\') < 0 && strings.IndexByte(lt.Text, '"') < 0 {
		return sh.matchPlainLine(lt.Text, lt.Uints)
	}
	head, fields := lt.Split()
	name, tags := splitUnescaped(head, ',')
	if name != sh.table {
		return false, nil
	}
	n := 0
	for tags != "" {
		var tag string
		tag, tags = splitUnescaped(tags[1:], ',')
		key, _ := splitUnescaped(tag, '=')
		if n == len(sh.tags) || sh.tags[n] != key {
			return false, nil
		}
		n++
	}
	if n != len(sh.tags) {
		return false, nil
	}
	var bad *LineError
	for n = 0; fields != ""; n++ {
		key, rest := splitUnescaped(fields, '=')
		value, next := fieldValue(rest[min(1, len(rest)):])
		if n == len(sh.fields) || sh.fields[n] != key || sh.types[n] != textType(value) {
			return false, nil
		}
		if err := checkValueText(value, lt.Uints); err != nil && bad == nil {
			bad = valueError(key, err)
		}
		fields = next
	}
	return n == len(sh.fields), bad
}

// matchPlainLine is matchLine for text without backslashes and quotes, as most is: there
// every comma, equals sign and space separates, and no key holds one. So a key of the shape
// is at i when the text there starts with it and an equals sign follows, which compares
// whole words; only the values are read byte by byte, to find where they end.
func (sh *shape) matchPlainLine(text string, uints bool) (bool, *LineError) {
	i := len(sh.table)
	if !strings.HasPrefix(text, sh.table) || i < len(text) && text[i] != ',' && text[i] != ' ' {
		return false, nil
	}
	for _, key := range sh.tags {
		if i == len(text) || text[i] != ',' {
			return false, nil
		}
		if i = keyAt(text, i+1, key); i < 0 {
			return false, nil
		}
		for i < len(text) && text[i] != ',' && text[i] != ' ' {
			i++
		}
	}
	if i == len(text) || text[i] != ' ' {
		return false, nil // more tags, or no fields
	}
	var bad *LineError
	for k, key := range sh.fields {
		if i = keyAt(text, i+1, key); i < 0 {
			return false, nil
		}
		start := i
		for i < len(text) && text[i] != ',' {
			i++
		}
		value := text[start:i]
		if sh.types[k] != textType(value) {
			return false, nil
		}
		if err := checkValueText(value, uints); err != nil && bad == nil {
			bad = valueError(key, err)
		}
	}
	return i == len(text), bad
}

// keyAt returns where the value after key starts when text holds key and an equals sign at
// i, and -1 otherwise.
func keyAt(text string, i int, key string) int {
	end := i + len(key)
	if end >= len(text) || text[end] != '=' || text[i:end] != key {
		return -1
	}
	return end + 1
}

// record makes m, which passed every check, the shape.
func (sh *shape) record(m morse.Metric) {
	sh.reset()
	sh.valid = true
	if lt, ok := m.Line(); ok {
		sh.line = true
		head, _ := lt.Split()
		name, tags := splitUnescaped(head, ',')
		sh.table = name
		for tags != "" {
			var tag string
			tag, tags = splitUnescaped(tags[1:], ',')
			key, _ := splitUnescaped(tag, '=')
			sh.tags = append(sh.tags, key)
		}
	} else {
		sh.line = false
		sh.table = m.Name()
		for _, t := range m.Tags() {
			if t.Key != "" && t.Value != "" {
				sh.tags = append(sh.tags, t.Key)
			}
		}
	}
	eachField(m, func(key, typ string) bool {
		sh.fields = append(sh.fields, key)
		sh.types = append(sh.types, typ)
		return true
	})
}
