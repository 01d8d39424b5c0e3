package serializers_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// TestAppendNumeric: the values graphite and carbon2 write, as Telegraf's internal.ToString
// writes them: floats in plain notation (no exponent), booleans 1 and 0, nothing for a
// string.
func TestAppendNumeric(t *testing.T) {
	for _, tc := range []struct {
		v    morse.Value
		want string
	}{
		{morse.Float(1e21), "1000000000000000000000"},
		{morse.Float(1.5e-7), "0.00000015"},
		{morse.Float(math.Inf(-1)), "-Inf"},
		{morse.Int(math.MinInt64), "-9223372036854775808"},
		{morse.Uint(math.MaxUint64), "18446744073709551615"},
		{morse.Bool(true), "1"},
		{morse.Bool(false), "0"},
		{morse.String("42"), ""},
		{morse.Value{}, ""},
	} {
		require.Equal(t, "x="+tc.want, string(serializers.AppendNumeric([]byte("x="), tc.v)), "%v", tc.v)
	}
}
