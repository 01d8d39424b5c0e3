package influx_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// TestUnsignedClamp is Telegraf's rule for unsigned fields (plugins/serializers/influx in
// Telegraf 1.39.3): without uint support a value up to the int64 maximum is written as that
// signed integer, and anything above it as the int64 maximum; with uint support it is
// written as it is, with "u". Inputs emit unsigned fields (mem, disk, net, ...), so this is
// what every output without influx_uint_support writes for them.
func TestUnsignedClamp(t *testing.T) {
	cases := []struct {
		v          uint64
		signed     string
		withUnsign string
	}{
		{0, "0i", "0u"},
		{1, "1i", "1u"},
		{math.MaxInt64 - 1, "9223372036854775806i", "9223372036854775806u"},
		{math.MaxInt64, "9223372036854775807i", "9223372036854775807u"},
		{math.MaxInt64 + 1, "9223372036854775807i", "9223372036854775808u"},
		{1 << 63, "9223372036854775807i", "9223372036854775808u"},
		{math.MaxUint64 - 1, "9223372036854775807i", "18446744073709551614u"},
		{math.MaxUint64, "9223372036854775807i", "18446744073709551615u"},
	}
	for _, tc := range cases {
		m := morse.NewMetric("mem", nil, []morse.Field{{Key: "total", Value: morse.Uint(tc.v)}}, time.Unix(0, 1))
		for _, uints := range []bool{false, true} {
			want := tc.signed
			if uints {
				want = tc.withUnsign
			}
			got, err := influx.New(influx.Options{UintSupport: uints}).AppendMetric(nil, m)
			require.NoError(t, err)
			require.Equal(t, "mem total="+want+" 1\n", string(got), "%d with uint support %v", tc.v, uints)
		}
	}
	// The default is Telegraf's: no uint support.
	got, err := influx.New(influx.Options{}).AppendMetric(nil,
		morse.NewMetric("m", nil, []morse.Field{{Key: "u", Value: morse.Uint(math.MaxUint64)}}, time.Unix(0, 1)))
	require.NoError(t, err)
	require.Equal(t, "m u=9223372036854775807i 1\n", string(got))
}
