// Package timeformat reads the timestamps of parsed documents as Telegraf's parsers do with
// their *_time_format and timestamp_format options: "unix", "unix_ms", "unix_us" and
// "unix_ns" take a number of seconds (milliseconds, ...) since the epoch, as a number or a
// string with an optional fraction; "timestamp_tz" and its _ms/_us/_ns variants take the
// same numbers counted in a zone's wall clock; any other format is a Go layout, or one of
// the names of the time package's layouts ("rfc3339", "ansic", ...), for a string.
//
// The arithmetic is exact, as Telegraf's is: a number is read as a fraction, scaled to
// nanoseconds and rounded down, so 1536002769.123 as a float64 gives the same nanosecond here
// as there.
package timeformat

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// ErrUnsupportedType is the error for a value that the format cannot read, such as a
// boolean, or a number for a Go layout.
var ErrUnsupportedType = errors.New("unsupported type")

// errInvalidNumber is the error for a unix time string that is not a number.
var errInvalidNumber = errors.New("invalid number")

// layouts are the time package's layouts by the names Telegraf accepts for them.
var layouts = map[string]string{
	"ansic": time.ANSIC, "unixdate": time.UnixDate, "rubydate": time.RubyDate,
	"rfc822": time.RFC822, "rfc822z": time.RFC822Z, "rfc850": time.RFC850,
	"rfc1123": time.RFC1123, "rfc1123z": time.RFC1123Z, "rfc3339": time.RFC3339,
	"rfc3339nano": time.RFC3339Nano, "stamp": time.Stamp, "stampmilli": time.StampMilli,
	"stampmicro": time.StampMicro, "stampnano": time.StampNano,
}

// Layout returns the Go layout that format names ("RFC3339", "ansic", ... in any case), or
// format itself, a layout of its own.
func Layout(format string) string {
	if l, ok := layouts[strings.ToLower(format)]; ok {
		return l
	}
	return format
}

// Unit returns the nanoseconds per unit of a unix format ("unix", "unix_ms", "unix_us",
// "unix_ns"), and whether format is one.
func Unit(format string) (int64, bool) {
	switch format {
	case "unix":
		return int64(time.Second), true
	case "unix_ms":
		return int64(time.Millisecond), true
	case "unix_us":
		return int64(time.Microsecond), true
	case "unix_ns":
		return 1, true
	}
	return 0, false
}

// Parse reads v, a float64 or a string (what a JSON document holds), in format; loc is the
// zone of layouts without an offset and of timestamp_tz numbers (nil: UTC).
func Parse(format string, v any, loc *time.Location) (time.Time, error) {
	if unit, ok := Unit(format); ok {
		return parseUnix(unit, v)
	}
	if rest, ok := strings.CutPrefix(format, "timestamp_tz"); ok {
		if unit, ok := Unit("unix" + rest); ok {
			t, err := parseUnix(unit, v)
			if err != nil {
				return t, err
			}
			if loc == nil {
				loc = time.UTC
			}
			_, offset := t.In(loc).Zone()
			return t.Add(-time.Duration(offset) * time.Second), nil
		}
	}
	s, ok := v.(string)
	if !ok {
		return time.Unix(0, 0), ErrUnsupportedType
	}
	return parseLayout(format, s, loc)
}

// parseUnix reads a count of units since the epoch.
func parseUnix(unit int64, v any) (time.Time, error) {
	var r big.Rat
	switch v := v.(type) {
	case float64:
		// Whole numbers, which most timestamps are, need no fraction.
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			n := int64(v)
			if ns := n * unit; unit == 1 || ns/unit == n {
				return time.Unix(0, ns).UTC(), nil
			}
		}
		if r.SetFloat64(v) == nil {
			return time.Unix(0, 0), errInvalidNumber
		}
	case string:
		if _, ok := r.SetString(sanitize(v)); !ok {
			return time.Unix(0, 0), errInvalidNumber
		}
	default:
		return time.Unix(0, 0), ErrUnsupportedType
	}
	num := new(big.Int).Mul(r.Num(), big.NewInt(unit))
	ns := num.Div(num, r.Denom())
	return time.Unix(0, ns.Int64()).UTC(), nil
}

// sanitize drops the blanks that separate thousands and makes the first comma or dot the
// decimal point, as Telegraf does with its default separators.
func sanitize(s string) string {
	s = strings.ReplaceAll(s, " ", "")
	for _, sep := range []string{",", "."} {
		if strings.Contains(s, sep) {
			return strings.Replace(s, sep, ".", 1)
		}
	}
	return s
}

// parseLayout reads s with a Go layout. A layout with a zone abbreviation (MST) reads it in
// the zone the abbreviation names, where Go alone would give it a zero offset.
func parseLayout(format, s string, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	format = Layout(format)
	if !strings.Contains(format, "MST") {
		return time.ParseInLocation(format, s, loc)
	}
	t, err := time.Parse(format, s)
	if err != nil {
		return time.Time{}, err
	}
	zone, offset := t.Zone()
	if zone == "UTC" || offset != 0 {
		return t.In(loc), nil
	}
	abbrev, err := time.LoadLocation(zone)
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot resolve timezone abbreviation %q: %w", zone, err)
	}
	t, err = time.ParseInLocation(format, s, abbrev)
	if err != nil {
		return time.Time{}, err
	}
	return t.In(loc), nil
}

// LoadLocation resolves a *_timezone option: "" is UTC, "Local" the machine's zone, any
// other value a name of the tz database.
func LoadLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(name)
}
