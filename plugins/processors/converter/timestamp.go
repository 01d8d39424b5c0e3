package converter

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// unixFactors are the timestamp formats that count from the Unix epoch, with their unit.
// The timestamp_tz variants are Telegraf's for a local time written as a Unix number; with
// no location configured they mean the same as the plain ones.
var unixFactors = map[string]int64{
	"unix": int64(time.Second), "unix_ms": int64(time.Millisecond),
	"unix_us": int64(time.Microsecond), "unix_ns": 1,
	"timestamp_tz": int64(time.Second), "timestamp_tz_ms": int64(time.Millisecond),
	"timestamp_tz_us": int64(time.Microsecond), "timestamp_tz_ns": 1,
}

// namedLayouts are the Go layouts that a format may name, case-insensitively.
var namedLayouts = map[string]string{
	"ansic": time.ANSIC, "unixdate": time.UnixDate, "rubydate": time.RubyDate,
	"rfc822": time.RFC822, "rfc822z": time.RFC822Z, "rfc850": time.RFC850,
	"rfc1123": time.RFC1123, "rfc1123z": time.RFC1123Z, "rfc3339": time.RFC3339,
	"rfc3339nano": time.RFC3339Nano, "stamp": time.Stamp, "stampmilli": time.StampMilli,
	"stampmicro": time.StampMicro, "stampnano": time.StampNano,
}

// timeParser turns a tag or field value into a time, in one configured format.
type timeParser struct {
	factor int64  // for the Unix formats, nanoseconds per unit; 0 for a layout
	layout string // the Go layout otherwise
}

func newTimeParser(format string) (timeParser, error) {
	if format == "" {
		return timeParser{}, errors.New("is required with timestamp")
	}
	if f, ok := unixFactors[format]; ok {
		return timeParser{factor: f}, nil
	}
	if l, ok := namedLayouts[strings.ToLower(format)]; ok {
		return timeParser{layout: l}, nil
	}
	return timeParser{layout: format}, nil
}

func (p timeParser) parse(v morse.Value) (time.Time, error) {
	if p.factor == 0 {
		if v.Type() != morse.TypeString {
			return time.Time{}, fmt.Errorf("a %s cannot hold a time in a layout", v.Type())
		}
		return time.ParseInLocation(p.layout, v.Str(), time.UTC)
	}
	var r big.Rat
	switch v.Type() {
	case morse.TypeInt:
		return time.Unix(0, v.Int()*p.factor).UTC(), nil
	case morse.TypeUint:
		return time.Unix(0, int64(v.Uint())*p.factor).UTC(), nil
	case morse.TypeFloat:
		// An exact fraction, so that 1.5 seconds is 1500000000 ns and not a rounding of it.
		if r.SetFloat64(v.Float()) == nil {
			return time.Time{}, errors.New("invalid number")
		}
	case morse.TypeString:
		if _, ok := r.SetString(sanitizeUnix(v.Str())); !ok {
			return time.Time{}, fmt.Errorf("invalid number %q", v.Str())
		}
	default:
		return time.Time{}, fmt.Errorf("a %s is not a Unix time", v.Type())
	}
	num := new(big.Int).Mul(r.Num(), big.NewInt(p.factor))
	return time.Unix(0, num.Div(num, r.Denom()).Int64()).UTC(), nil
}

// sanitizeUnix reads a Unix time written with a decimal comma or with spaces between digit
// groups as Telegraf does: spaces go, and the first comma (or else the first dot) is the
// decimal separator.
func sanitizeUnix(s string) string {
	s = strings.ReplaceAll(s, " ", "")
	if strings.Contains(s, ",") {
		return strings.Replace(s, ",", ".", 1)
	}
	return s
}
