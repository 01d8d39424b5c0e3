package csv

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // csv_timezone and zone abbreviations resolve on hosts without zoneinfo

	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// timeFormat reads the timestamp column in one csv_timestamp_format.
type timeFormat struct {
	factor int64 // nanoseconds per unit of a Unix format; 0 for a layout
	wall   bool  // a timestamp_tz format: the number counts csv_timezone's wall clock
	layout string
	loc    *time.Location
	// zones caches the locations of zone abbreviations met in layouts with "MST".
	zones map[string]*time.Location
}

func newTimeFormat(format, zone string) (timeFormat, error) {
	f := timeFormat{loc: time.UTC}
	if zone != "" {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return f, fmt.Errorf("unknown time zone %q: %w", zone, err)
		}
		f.loc = loc
	}
	if tz, ok := strings.CutPrefix(format, "timestamp_tz"); ok {
		format, f.wall = "unix"+tz, true
	}
	if factor, ok := timeformat.Unit(format); ok {
		f.factor = factor
		return f, nil
	}
	f.wall = false
	f.layout = timeformat.Layout(format)
	return f, nil
}

// parse reads one timestamp.
func (f *timeFormat) parse(s string) (time.Time, error) {
	if f.factor == 0 {
		return f.parseLayout(s)
	}
	t, err := f.parseUnix(s)
	if err != nil || !f.wall {
		return t, err
	}
	_, offset := t.In(f.loc).Zone()
	return t.Add(-time.Duration(offset) * time.Second), nil
}

// parseUnix reads a Unix time as Telegraf does: spaces between digit groups are dropped,
// the first comma (or else the first dot) is the decimal separator, and the fraction is
// exact, so that 1551129661.954561233 s is 1551129661954561233 ns.
func (f *timeFormat) parseUnix(s string) (time.Time, error) {
	if strings.ContainsRune(s, ' ') {
		s = strings.ReplaceAll(s, " ", "")
	}
	if strings.ContainsRune(s, ',') {
		s = strings.Replace(s, ",", ".", 1)
	}
	if maybeInt(s) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= math.MinInt64/f.factor && n <= math.MaxInt64/f.factor {
			return time.Unix(0, n*f.factor).UTC(), nil
		}
	}
	var r big.Rat
	if _, ok := r.SetString(s); !ok {
		return time.Time{}, fmt.Errorf("%q is not a number", s)
	}
	ns := new(big.Int).Mul(r.Num(), big.NewInt(f.factor))
	ns.Quo(ns, r.Denom())
	if !ns.IsInt64() {
		return time.Time{}, fmt.Errorf("%q is out of range", s)
	}
	return time.Unix(0, ns.Int64()).UTC(), nil
}

// parseLayout reads a time in a Go layout, in csv_timezone where the text has no offset.
// A zone abbreviation (a layout with "MST") is read as Telegraf reads it since 1.27: as the
// zone of that name where Go knows one, since Go gives unknown abbreviations offset zero.
func (f *timeFormat) parseLayout(s string) (time.Time, error) {
	if !strings.Contains(f.layout, "MST") {
		return time.ParseInLocation(f.layout, s, f.loc)
	}
	t, err := time.Parse(f.layout, s)
	if err != nil {
		return t, err
	}
	zone, offset := t.Zone()
	if zone == "UTC" || offset != 0 {
		return t.In(f.loc), nil
	}
	loc, ok := f.zones[zone]
	if !ok {
		loc, err = time.LoadLocation(zone)
		if err != nil {
			return time.Time{}, fmt.Errorf("zone abbreviation %q: %w", zone, err)
		}
		if f.zones == nil {
			f.zones = make(map[string]*time.Location)
		}
		f.zones[zone] = loc
	}
	t, err = time.ParseInLocation(f.layout, s, loc)
	if err != nil {
		return t, err
	}
	return t.In(f.loc), nil
}
