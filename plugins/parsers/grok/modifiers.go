package grok

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// kind is what a modifier makes of a capture.
type kind uint8

const (
	kindString      kind = iota // a string field, the default
	kindInt                     // an integer field: strconv.ParseInt base 0 (0x1f, 0o17, 017 as octal)
	kindFloat                   // a float field
	kindDuration                // an integer field of nanoseconds from a Go duration ("5.4ms")
	kindTag                     // a tag
	kindDrop                    // nothing
	kindMeasurement             // the metric's name
	kindEpoch                   // the time, from seconds with an optional fraction
	kindEpochMilli              // the time, from integer milliseconds
	kindEpochNano               // the time, from integer nanoseconds
	kindSyslog                  // the time, from "Jan _2 15:04:05" in the year of the parse
	kindGeneric                 // the time, in whichever known layout reads it
	kindLayout                  // the time, in one layout
)

// modifier is a capture's kind and, for kindLayout, its layout.
type modifier struct {
	kind   kind
	layout string
}

// modifiers are a pattern's modifiers by capture name: types are the plain ones, ts the
// timestamp one. A name with both is read by its type, as in Telegraf.
type modifiers struct {
	types map[string]modifier
	ts    map[string]modifier
}

// of returns the modifier of capture name: a string field unless the pattern says otherwise.
func (m modifiers) of(name string) modifier {
	if t, ok := m.types[name]; ok {
		return t
	}
	if t, ok := m.ts[name]; ok {
		return t
	}
	return modifier{kind: kindString}
}

// typeModifiers are the modifiers that are not timestamps.
var typeModifiers = map[string]kind{
	"string": kindString, "int": kindInt, "float": kindFloat, "duration": kindDuration,
	"tag": kindTag, "drop": kindDrop, "measurement": kindMeasurement,
}

// timeModifiers are Telegraf's named timestamp modifiers; ts-"LAYOUT" gives a layout of
// one's own.
var timeModifiers = map[string]modifier{
	"ts":             {kind: kindGeneric},
	"ts-ansic":       {kindLayout, time.ANSIC},
	"ts-unix":        {kindLayout, time.UnixDate},
	"ts-ruby":        {kindLayout, time.RubyDate},
	"ts-rfc822":      {kindLayout, time.RFC822},
	"ts-rfc822z":     {kindLayout, time.RFC822Z},
	"ts-rfc850":      {kindLayout, time.RFC850},
	"ts-rfc1123":     {kindLayout, time.RFC1123},
	"ts-rfc1123z":    {kindLayout, time.RFC1123Z},
	"ts-rfc3339":     {kindLayout, time.RFC3339},
	"ts-rfc3339nano": {kindLayout, time.RFC3339Nano},
	"ts-httpd":       {kindLayout, "02/Jan/2006:15:04:05 -0700"},
	"ts-epoch":       {kind: kindEpoch},
	"ts-epochnano":   {kind: kindEpochNano},
	"ts-epochmilli":  {kind: kindEpochMilli},
	"ts-syslog":      {kind: kindSyslog},
}

// genericLayouts are the layouts that the "ts" modifier tries, in the order of Telegraf's
// documentation (Telegraf tries them in a map's order, which differs from run to run).
var genericLayouts = []string{
	time.ANSIC, time.UnixDate, time.RubyDate, time.RFC822, time.RFC822Z, time.RFC850,
	time.RFC1123, time.RFC1123Z, time.RFC3339, time.RFC3339Nano, "02/Jan/2006:15:04:05 -0700",
}

// modifierRe finds a modifier: %{PATTERN:capture:modifier}, the modifier a word or
// ts-"LAYOUT". Telegraf's expression takes the layout greedily, up to the last `"}` of the
// pattern; this one stops at the first, which differs only where a pattern has two.
var modifierRe = regexp.MustCompile(`%{(\w+):(\w+):(ts-".+?"|t?s?-?\w+)}`)

// takeModifiers returns text without its modifiers, and the modifiers by capture name. A
// pattern may have one timestamp modifier. A modifier that Telegraf does not know is an
// error here; Telegraf takes it for a time layout that never reads, and drops the capture.
func takeModifiers(text string) (string, modifiers, error) {
	mods := modifiers{types: map[string]modifier{}, ts: map[string]modifier{}}
	var errs []error
	hasTime := false
	out := modifierRe.ReplaceAllStringFunc(text, func(ref string) string {
		m := modifierRe.FindStringSubmatch(ref)
		syntax, name, mod := m[1], m[2], m[3]
		if strings.HasPrefix(mod, "ts") {
			if hasTime {
				errs = append(errs, fmt.Errorf("a pattern may have one timestamp modifier, %%{%s:%s:%s} is a second", syntax, name, mod))
			}
			hasTime = true
			tm, ok := timeModifiers[mod]
			if l, quoted := strings.CutPrefix(mod, `ts-"`); quoted {
				tm, ok = modifier{kindLayout, strings.TrimSuffix(l, `"`)}, true
			}
			if !ok {
				errs = append(errs, fmt.Errorf("unknown timestamp modifier %q in %s (a layout of one's own is written ts-\"LAYOUT\")", mod, ref))
			}
			mods.ts[name] = tm
		} else {
			k, ok := typeModifiers[mod]
			if !ok {
				errs = append(errs, fmt.Errorf("unknown modifier %q in %s", mod, ref))
			}
			mods.types[name] = modifier{kind: k}
		}
		return "%{" + syntax + ":" + name + "}"
	})
	return out, mods, errors.Join(errs...)
}
