package influxdb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLimitExceeded(t *testing.T) {
	tests := []struct {
		msg              string
		measurement, key string
		ok               bool
	}{
		{`partial write: max-values-per-tag limit exceeded (100/100): measurement="cpu" tag="id" value="x9" dropped=3`, "cpu", "id", true},
		{`{"error":"partial write: max-values-per-tag limit exceeded (2/2): measurement=\"m \\\"q\\\"\" tag=\"a,b\" value=\"v\" dropped=1"}`, "", "", false},
		{`max-values-per-tag limit exceeded (5/5): measurement="m \"q\"" tag="a,b" value="v"`, `m "q"`, "a,b", true},
		{`partial write: field type conflict: input field "v" on measurement "m" is type string dropped=1`, "", "", false},
		{`max-values-per-tag limit exceeded (5/5): measurement=m tag="a"`, "", "", false},
	}
	for _, tt := range tests {
		m, k, ok := parseLimitExceeded(tt.msg)
		require.Equal(t, tt.ok, ok, tt.msg)
		require.Equal(t, tt.measurement, m, tt.msg)
		require.Equal(t, tt.key, k, tt.msg)
	}
}

// The guard hears of a refusal through the function the engine hands over, with the key
// the server named; other answers and an output without a guard tell it nothing.
func TestReportTagLimit(t *testing.T) {
	o := New()
	o.reportTagLimit(`partial write: max-values-per-tag limit exceeded (2/2): measurement="m" tag="id" value="x" dropped=1`)
	var got [][2]string
	o.SetTagLimitGuard(func(m, k string) { got = append(got, [2]string{m, k}) })
	o.reportTagLimit(`partial write: field type conflict: input field "v" on measurement "m" is type string dropped=1`)
	o.reportTagLimit(`partial write: max-values-per-tag limit exceeded (2/2): measurement="m" tag="id" value="x" dropped=1`)
	require.Equal(t, [][2]string{{"m", "id"}}, got)
}
