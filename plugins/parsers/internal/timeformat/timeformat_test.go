package timeformat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParse covers what the parsers' golden cases do not: timestamp_tz, separators in unix
// strings, and the types a format cannot read.
func TestParse(t *testing.T) {
	ny, err := LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, tc := range []struct {
		format string
		v      any
		loc    *time.Location
		want   int64 // nanoseconds
	}{
		{"unix", "1 536 001 411,5", nil, 1536001411_500000000},
		{"unix_ns", float64(-5), nil, -5},
		{"unix", 1.5, nil, 1_500000000},
		// 2023-11-14 22:13:20 on a New York wall clock (EST, -5h) is 5 hours later in UTC.
		{"timestamp_tz", float64(1700000000), ny, (1700000000 + 5*3600) * 1e9},
		{"timestamp_tz_ms", "1700000000000", nil, 1700000000 * 1e9},
	} {
		got, err := Parse(tc.format, tc.v, tc.loc)
		require.NoError(t, err, "%s %v", tc.format, tc.v)
		require.Equal(t, tc.want, got.UnixNano(), "%s %v", tc.format, tc.v)
	}
	_, err = Parse("unix", true, nil)
	require.ErrorIs(t, err, ErrUnsupportedType)
	_, err = Parse("2006", 2006.0, nil)
	require.ErrorIs(t, err, ErrUnsupportedType)
	_, err = Parse("unix", "12x", nil)
	require.Error(t, err)
}
