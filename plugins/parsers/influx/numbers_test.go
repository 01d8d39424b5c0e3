package influx

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkNumbers holds the fast number readers to strconv for one input: the same value, or
// an error from both.
func checkNumbers(t *testing.T, s string) {
	t.Helper()
	wantI, errI := strconv.ParseInt(s, 10, 64)
	gotI, err := parseInt([]byte(s))
	require.Equal(t, errI == nil, err == nil, "parseInt(%q): %v", s, err)
	require.Equal(t, wantI, gotI, "parseInt(%q)", s)

	wantU, errU := strconv.ParseUint(s, 10, 64)
	gotU, err := parseUint([]byte(s))
	require.Equal(t, errU == nil, err == nil, "parseUint(%q): %v", s, err)
	require.Equal(t, wantU, gotU, "parseUint(%q)", s)

	if f, ok := parseSimpleFloat([]byte(s)); ok {
		want, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, "parseSimpleFloat accepted %q", s)
		require.Equal(t, math.Float64bits(want), math.Float64bits(f), "parseSimpleFloat(%q) = %v, want %v", s, f, want)
	}
}

func TestNumbersAgreeWithStrconv(t *testing.T) {
	for _, s := range []string{
		"", "-", "0", "-0", "00", "007", "+5", "1_000", "0x10", " 1",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999", "1234567890123456789",
		".", "1.", ".5", "-.5", "-0.0", "1.2.3", "1e5", "0.1", "0.3", "123456789012345", "1234567890123456",
		"999999999999999", "0.000000000000001", "9007199254740993", "3.141592653589793", "-12.25",
	} {
		checkNumbers(t, s)
	}
	// Random numbers in the forms senders write: up to 20 digits, a sign, a decimal point.
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, 24)
	for range 200_000 {
		buf = buf[:0]
		if rng.IntN(3) == 0 {
			buf = append(buf, '-')
		}
		n := 1 + rng.IntN(20)
		dot := -1
		if rng.IntN(2) == 0 {
			dot = rng.IntN(n + 1)
		}
		for i := range n {
			if i == dot {
				buf = append(buf, '.')
			}
			buf = append(buf, byte('0'+rng.IntN(10)))
		}
		checkNumbers(t, string(buf))
	}
}

// FuzzNumbers: for any bytes, the fast number readers agree with strconv.
func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"0", "-9223372036854775808", "18446744073709551615", "-.5", "1.25", "1e5", "+1"} {
		f.Add(s)
	}
	f.Fuzz(checkNumbers)
}
