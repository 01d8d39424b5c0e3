package grok

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUniquer: Telegraf's cases for its timestamp modder. A repeated time moves on by a
// step one unit finer than its precision, once more for each further repeat.
func TestUniquer(t *testing.T) {
	var u uniquer
	for _, tc := range []struct {
		ns   int
		step time.Duration
	}{
		{int(time.Millisecond), time.Microsecond},
		{int(time.Microsecond), time.Nanosecond},
		{int(time.Microsecond) * 999, time.Nanosecond},
		{0, time.Millisecond},
	} {
		ref := time.Date(2006, time.December, 1, 1, 1, 1, tc.ns, time.UTC)
		require.Equal(t, ref, u.next(ref))
		for i := 1; i <= 3; i++ {
			require.Equal(t, ref.Add(tc.step*time.Duration(i)), u.next(ref), "%v repeat %d", ref, i)
		}
	}
	require.Equal(t, time.Time{}, u.next(time.Time{}), "the zero time stays")
}

// TestUniquerRollover: after 998 repeats the step shrinks a thousandfold.
func TestUniquerRollover(t *testing.T) {
	var u uniquer
	ref := time.Date(2006, time.December, 1, 1, 1, 1, int(time.Millisecond), time.UTC)
	got := u.next(ref)
	for range 999 {
		got = u.next(ref)
	}
	require.Equal(t, ref.Add(999*time.Microsecond+time.Nanosecond), got)

	ref = time.Date(2006, time.December, 1, 1, 1, 1, int(time.Microsecond), time.UTC)
	got = u.next(ref)
	for range 1000 {
		got = u.next(ref)
	}
	require.Equal(t, ref.Add(1000*time.Nanosecond), got)
}

// TestUniquerEpochZero: a repeated 1970-01-01T00:00:00Z, all zeros, gets the largest
// step; Telegraf's modder divides by zero on it.
func TestUniquerEpochZero(t *testing.T) {
	var u uniquer
	ref := time.Unix(0, 0)
	u.next(ref)
	require.Equal(t, ref.Add(time.Millisecond), u.next(ref))
	before := time.Unix(0, -1)
	u.next(before)
	require.Equal(t, before.Add(time.Nanosecond), u.next(before))
}

// TestClockFormats: a layout of one's own may be one of Telegraf's numeric formats or
// layout names, as its timestamp parser takes them.
func TestClockFormats(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	c := clock{loc: berlin}
	now := func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		layout, v string
		want      time.Time
	}{
		{"unix", "1466004605.5", time.Unix(1466004605, 5e8)},
		{"unix", "1466004605,5", time.Unix(1466004605, 5e8)},
		{"unix_ms", "1466004605123", time.Unix(1466004605, 123e6)},
		{"unix_us", "1466004605123456", time.Unix(1466004605, 123456e3)},
		{"unix_ns", "1466004605123456789", time.Unix(1466004605, 123456789)},
		{"unix", "-1.5", time.Unix(-2, 5e8)},
		{"timestamp_tz", "1466004605", time.Unix(1466004605-7200, 0)},
		{"RFC3339", "2016-06-15T15:30:05+02:00", time.Unix(1465997405, 0)},
		{"stamp", "Jun 15 15:30:05", time.Date(2020, time.June, 15, 15, 30, 5, 0, berlin)},
		{"2006-01-02 15:04:05", "2016-06-15 15:30:05", time.Date(2016, time.June, 15, 15, 30, 5, 0, berlin)},
		{"2006-01-02 15:04:05 MST", "2016-06-15 15:30:05 CET", time.Date(2016, time.June, 15, 14, 30, 5, 0, time.UTC)},
		{"2006-01-02 15:04:05 MST", "2016-06-15 15:30:05 UTC", time.Date(2016, time.June, 15, 15, 30, 5, 0, time.UTC)},
	} {
		got, err := c.read(modifier{kindLayout, tc.layout}, tc.v, now)
		require.NoError(t, err, tc.layout)
		require.True(t, tc.want.Equal(got), "%s %s: %v, want %v", tc.layout, tc.v, got, tc.want)
	}
	_, err = c.read(modifier{kindLayout, "2006-01-02 15:04:05 MST"}, "2016-06-15 15:30:05 XYZ", now)
	require.ErrorContains(t, err, `cannot resolve timezone abbreviation "XYZ"`)
}
