package grok

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// clock reads timestamps for one Parser: the time zone of layouts without an offset, and
// the layout that last read a "ts" capture.
type clock struct {
	loc    *time.Location
	learnt int // index in genericLayouts
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

// parse reads v in layout as Telegraf's timestamp parser does (timeformat): layout may
// also be a numeric format (unix, unix_ms, timestamp_tz...) or a layout's name (rfc3339,
// stamp...); a time without an offset is in the configured zone.
func (c *clock) parse(layout, v string) (time.Time, error) {
	return timeformat.Parse(layout, v, c.loc)
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
