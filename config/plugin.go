package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The plugin kinds, as written in the config: [[inputs.NAME]] and [[outputs.NAME]].
const (
	KindInputs      = "inputs"
	KindOutputs     = "outputs"
	KindProcessors  = "processors"
	KindAggregators = "aggregators"
)

// Plugin is one [[inputs.NAME]] or [[outputs.NAME]] table. The options every plugin of its
// kind shares are already decoded; Decode hands the remaining keys to the plugin itself.
type Plugin struct {
	Kind string // KindInputs, KindOutputs, KindProcessors or KindAggregators
	Name string // the NAME of the header
	File string // the file or source that holds the table
	Line int    // the line of the header

	Input      InputCommon      // the shared options of an input
	Output     OutputCommon     // the shared options of an output
	Processor  ProcessorCommon  // the shared options of a processor
	Aggregator AggregatorCommon // the shared options of an aggregator

	Interval time.Duration  // the effective gather interval of an input
	Settings OutputSettings // the effective flush and buffer settings of an output

	// Fingerprint is equal for two tables with equal content after substitution, whatever
	// their key order, spacing, comments or file. A reload keeps an output whose fingerprint
	// did not change, with its buffer. It is a hash, so that it never shows a secret.
	Fingerprint string

	table map[string]any // the whole table
	rest  map[string]any // the keys that the shared options did not take
	index *lineIndex
	root  string // the table's path in index, such as "inputs.cpu[1]"
}

// ID names the plugin's kind and name as in the header: "inputs.cpu".
func (p *Plugin) ID() string { return p.Kind + "." + p.Name }

// Source is "file:line" of the header, for logs that must point at the config.
func (p *Plugin) Source() string { return p.File + ":" + strconv.Itoa(p.Line) }

// KeyLine returns the line of key, a dotted path relative to the plugin's table such as
// "timeout" or "tagpass.cpu", so that callers can place a problem that a plugin's Validate
// found. A key that is not written in the table (a default that is wrong) gets the line of
// its closest written parent, and in the end the header's line.
func (p *Plugin) KeyLine(key string) int {
	if key == "" || p.index == nil {
		return p.Line
	}
	l := p.index.line(joinPath(p.root, p.writtenKey(key)))
	if l < p.Line {
		// The lookup fell back beyond the table to a line before its header.
		return p.Line
	}
	return l
}

// Errorf builds a problem at key, which is relative to the plugin's table.
func (p *Plugin) Errorf(key, format string, args ...any) Error {
	return Error{File: p.File, Line: p.KeyLine(key), Key: joinPath(p.ID(), p.writtenKey(key)), Msg: fmt.Sprintf(format, args...)}
}

// writtenKey maps a filter key to Telegraf's older name when the table uses that one, so that
// a problem found in FilterConfig.FieldInclude points at the fieldpass the user wrote.
func (p *Plugin) writtenKey(key string) string {
	for old, k := range legacyFilterKeys {
		if key == k && !p.has(k) && p.has(old) {
			return old
		}
	}
	return key
}

// has reports whether the table sets key.
func (p *Plugin) has(key string) bool {
	_, ok := p.table[key]
	return ok
}

// Decode decodes the plugin's own keys into v, a pointer to the plugin's struct whose fields
// carry toml tags. Fields keep their value when the table leaves their key out, so v should
// hold the plugin's defaults. Each bad value and each key that neither the shared options nor
// v take is a separate problem. The keys of the shared options (interval, alias, tags, the
// filters, ...) are never passed to v, so a plugin field with such a key stays at its default.
//
// Keys match fields by toml tag, then by field name, then either one ignoring case, as with
// BurntSushi/toml. Untagged embedded structs share the table. Types with UnmarshalTOML (such
// as morse.Duration and morse.Size) or UnmarshalText decode themselves; a bare time.Duration takes only a
// string like "10s".
func (p *Plugin) Decode(v any) Errors {
	errs, _ := p.decode(v)
	return errs
}

// decode is Decode that also reports whether every problem is an unknown key, which leaves
// v whole, so that the plugin can still validate itself in the same run.
func (p *Plugin) decode(v any) (Errors, bool) {
	d := &decoder{}
	rv := reflect.ValueOf(v)
	switch {
	case len(p.rest) == 0:
		return nil, true
	case v == nil || rv.Kind() != reflect.Pointer || rv.IsNil():
		// A plugin without options still rejects every key it was given.
		for _, k := range sortedKeys(p.rest) {
			d.unknownKey(k)
		}
	default:
		if u, ok := v.(unmarshalerTOML); ok {
			if err := u.UnmarshalTOML(p.rest); err != nil {
				d.fail("", "%s", err.Error())
			}
			break
		}
		if rv.Elem().Kind() == reflect.Struct {
			d.table("", p.rest, rv.Elem())
		} else {
			d.value("", p.rest, rv.Elem())
		}
	}
	return p.errors(d.problems), d.onlyUnknown()
}

// errors places decoder problems in the file.
func (p *Plugin) errors(probs []problem) Errors {
	var errs Errors
	for _, pr := range probs {
		errs = append(errs, p.Errorf(pr.Path, "%s", pr.Msg))
	}
	return errs
}

// fingerprint hashes a canonical form of the table: keys sorted, values typed.
func fingerprint(kind, name string, table map[string]any) string {
	var b strings.Builder
	b.WriteString(kind)
	b.WriteByte('.')
	b.WriteString(strconv.Quote(name))
	canonical(&b, table)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func canonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for _, k := range sortedKeys(x) {
			b.WriteString(strconv.Quote(k))
			b.WriteByte('=')
			canonical(b, x[k])
			b.WriteByte(';')
		}
		b.WriteByte('}')
	case []any, []map[string]any:
		b.WriteByte('[')
		for _, item := range arrayItems(x) {
			canonical(b, item)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case string:
		b.WriteString(strconv.Quote(x))
	case int64:
		b.WriteString("i" + strconv.FormatInt(x, 10))
	case float64:
		b.WriteString("f" + strconv.FormatFloat(x, 'g', -1, 64))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case time.Time:
		b.WriteString("t" + x.Format(time.RFC3339Nano))
	default:
		fmt.Fprintf(b, "%T(%v)", x, x)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
