package grok

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// clock reads timestamps for one Parser: the time zone of layouts without an offset, and
// what it learnt while parsing (the layout that last read a "ts" capture, the locations of
// zone abbreviations).
type clock struct {
	loc    *time.Location
	learnt int // index in genericLayouts of the layout that last read a "ts" capture
	zones  map[string]*time.Location
}

// epoch reads seconds since 1970 with an optional fraction of up to nine digits ("1466004605",
// "1466004605.359"); digits beyond nanoseconds are ignored.
func epoch(v string) (time.Time, error) {
	secs, frac, hasFrac := strings.Cut(v, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	if !hasFrac {
		return time.Unix(sec, 0), nil
	}
	var digits [9]byte
	n := copy(digits[:], frac)
	for i := range digits {
		if i >= n || digits[i] == ' ' {
			digits[i] = '0'
		}
	}
	ns, err := strconv.ParseInt(string(digits[:]), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(sec, 0).Add(time.Duration(ns)), nil
}

// read converts capture v by its timestamp modifier. now gives the year of timestamps that
// have none.
func (c *clock) read(m modifier, v string, now func() time.Time) (time.Time, error) {
	switch m.kind {
	case kindEpoch:
		return epoch(v)
	case kindEpochMilli, kindEpochNano:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, err
		}
		if m.kind == kindEpochMilli {
			n *= int64(time.Millisecond)
		}
		return time.Unix(0, n), nil
	case kindSyslog:
		return withYear(c.parse(time.Stamp, v))(now)
	case kindGeneric:
		return c.generic(v)
	default:
		// Telegraf reads a comma as the decimal point of a layout's fraction.
		return withYear(c.parse(m.layout, strings.ReplaceAll(v, ",", ".")))(now)
	}
}

// withYear puts a time without a year into the current year, as Telegraf does for
// layouts such as syslog's.
func withYear(t time.Time, err error) func(now func() time.Time) (time.Time, error) {
	return func(now func() time.Time) (time.Time, error) {
		if err == nil && t.Year() == 0 {
			t = t.AddDate(now().Year(), 0, 0)
		}
		return t, err
	}
}

// errNoLayout is the reason a "ts" capture is refused.
var errNoLayout = errors.New("no known timestamp layout reads it")

// generic reads v in the first of genericLayouts that reads it, trying the one that read
// the last such capture first.
func (c *clock) generic(v string) (time.Time, error) {
	if t, err := c.parse(genericLayouts[c.learnt], v); err == nil {
		return t, nil
	}
	for i, layout := range genericLayouts {
		if t, err := c.parse(layout, v); err == nil {
			c.learnt = i
			return t, nil
		}
	}
	return time.Time{}, errNoLayout
}

// namedLayouts are the layout names that Telegraf's timestamp parser takes besides Go
// layouts, in lower case.
var namedLayouts = map[string]string{
	"ansic": time.ANSIC, "unixdate": time.UnixDate, "rubydate": time.RubyDate,
	"rfc822": time.RFC822, "rfc822z": time.RFC822Z, "rfc850": time.RFC850,
	"rfc1123": time.RFC1123, "rfc1123z": time.RFC1123Z, "rfc3339": time.RFC3339,
	"rfc3339nano": time.RFC3339Nano, "stamp": time.Stamp, "stampmilli": time.StampMilli,
	"stampmicro": time.StampMicro, "stampnano": time.StampNano,
}

// unitScale is the nanoseconds of one unit of Telegraf's numeric formats.
var unitScale = map[string]int64{"unix": 1e9, "unix_ms": 1e6, "unix_us": 1e3, "unix_ns": 1}

// parse reads v in layout as Telegraf's timestamp parser does: layout may also be a numeric
// format (unix, unix_ms, unix_us, unix_ns, timestamp_tz...) or a named layout (rfc3339,
// stamp, ...); a time without an offset is in the configured zone; a zone abbreviation
// such as CET is looked up as a location.
func (c *clock) parse(layout, v string) (time.Time, error) {
	if scale, ok := unitScale[layout]; ok {
		return unix(v, scale)
	}
	if unit, ok := strings.CutPrefix(layout, "timestamp_tz"); ok {
		if scale, ok := unitScale["unix"+unit]; ok {
			t, err := unix(v, scale)
			if err != nil {
				return t, err
			}
			_, offset := t.In(c.loc).Zone()
			return t.Add(-time.Duration(offset) * time.Second), nil
		}
	}
	if named, ok := namedLayouts[strings.ToLower(layout)]; ok {
		layout = named
	}
	if !strings.Contains(layout, "MST") {
		return time.ParseInLocation(layout, v, c.loc)
	}
	// Go gives an abbreviation it does not know a zero offset: find its location by name.
	t, err := time.Parse(layout, v)
	if err != nil {
		return t, err
	}
	zone, offset := t.Zone()
	if zone == "UTC" || offset != 0 {
		return t.In(c.loc), nil
	}
	loc, ok := c.zones[zone]
	if !ok {
		if loc, err = time.LoadLocation(zone); err != nil {
			return time.Time{}, fmt.Errorf("cannot resolve timezone abbreviation %q: %w", zone, err)
		}
		if c.zones == nil {
			c.zones = map[string]*time.Location{}
		}
		c.zones[zone] = loc
	}
	t, err = time.ParseInLocation(layout, v, loc)
	return t.In(c.loc), err
}

// unix reads a number of units (scale nanoseconds each) since 1970, exactly: a comma or
// the first dot is the decimal point, spaces are ignored.
func unix(v string, scale int64) (time.Time, error) {
	v = strings.ReplaceAll(v, " ", "")
	if strings.Contains(v, ",") {
		v = strings.Replace(v, ",", ".", 1)
	}
	var r big.Rat
	if _, ok := r.SetString(v); !ok {
		return time.Unix(0, 0), fmt.Errorf("invalid number %q", v)
	}
	// Div rounds down, as Telegraf's does, where Quo would round towards zero.
	num := new(big.Int).Mul(r.Num(), big.NewInt(scale))
	return time.Unix(0, num.Div(num, r.Denom()).Int64()).UTC(), nil
}

// uniquer makes the timestamps of successive metrics differ (grok_unique_timestamp =
// "auto"), as Telegraf does: a timestamp equal to the one before is moved on by a step
// one unit finer than its precision (1ms for whole seconds, 1µs for milliseconds, 1ns
// otherwise), once more for each further repeat, the step shrinking a thousandfold after
// 998 repeats.
type uniquer struct {
	last, repeated time.Time
	step           time.Duration
	steps          time.Duration
	carried        time.Duration
}

func (u *uniquer) next(ts time.Time) time.Time {
	if ts.IsZero() {
		return ts
	}
	last := u.last
	u.last = ts
	switch {
	case last.IsZero():
		u.steps, u.carried = 0, 0
		return ts
	case !ts.Equal(last) && !ts.Equal(u.repeated):
		u.step, u.steps, u.carried = 0, 0, 0
		return ts
	case ts.Equal(last):
		u.repeated = ts
	}
	if ts.Equal(u.repeated) && u.step == 0 {
		u.step = stepFor(ts.UnixNano())
	}
	u.steps++
	if u.steps == 999 && u.step > time.Nanosecond {
		u.carried = u.step * u.steps
		u.steps = 1
		u.step = max(u.step/1000, time.Nanosecond)
	}
	return ts.Add(u.step*u.steps + u.carried)
}

// stepFor is the step for repeats of a time of ns nanoseconds: by the number of its
// trailing decimal zeros.
func stepFor(ns int64) time.Duration {
	zeros := 0
	for d := int64(10); zeros < 18 && ns%d == 0; d *= 10 {
		zeros++
	}
	switch {
	case zeros < 6:
		return time.Nanosecond
	case zeros < 9:
		return time.Microsecond
	default:
		return time.Millisecond
	}
}
