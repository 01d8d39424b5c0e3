package iotdb

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendFloat: every float written reads back as the same float64, integers and short
// decimals are written as fixed-point digits, and the rest as strconv writes them.
func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", math.Copysign(0, -1): "-0", 80: "80", -3: "-3", 12.5: "12.5", 80.125: "80.125",
		-0.001: "-0.001", 0.1: "0.1", 0.000001: "0.000001", 1234.567891: "1234.567891",
		1e17: "100000000000000000", 1e18: "1e+18", 0.1234567: "0.1234567", 1e-7: "1e-07",
		math.MaxFloat64: "1.7976931348623157e+308", 9007199254.5: "9007199254.5", 1.0 / 3: "0.3333333333333333",
	} {
		got := string(appendFloat([]byte("x"), f))
		require.Equal(t, "x"+want, got, "%v", f)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var f float64
		switch r.IntN(4) {
		case 0: // short decimals, where the fast path and rounding meet
			f = float64(r.Int64N(2_000_000_000_000)-1_000_000_000_000) / math.Pow10(r.IntN(8))
		case 1:
			f = r.NormFloat64() * math.Pow10(r.IntN(40)-20)
		case 2:
			f = math.Float64frombits(r.Uint64())
		default:
			f = float64(r.Int64()) / 1e6
		}
		if !finite(f) {
			continue
		}
		s := string(appendFloat(nil, f))
		back, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, s)
		require.Equal(t, math.Float64bits(f), math.Float64bits(back), "%v written as %s", f, s)
	}
}

// TestAppendInt: as strconv writes integers, at the edges of every digit count.
func TestAppendInt(t *testing.T) {
	ints := []int64{0, 1, -1, 9, 10, 99, 100, math.MaxInt64, math.MinInt64, 1_700_000_000_000_000_000}
	for _, p := range upow10[:19] {
		ints = append(ints, int64(p), int64(p)-1, -int64(p), int64(p)+1)
	}
	for _, n := range ints {
		require.Equal(t, strconv.AppendInt([]byte("x"), n, 10), appendInt([]byte("x"), n))
	}
	for _, u := range []uint64{math.MaxUint64, 1e19, 1e19 - 1, 1<<63 + 5} {
		require.Equal(t, strconv.FormatUint(u, 10), string(appendUint(nil, u)))
	}
}

// TestSameName is == for names of every length around its word compares.
func TestSameName(t *testing.T) {
	base := "abcdefghijklmnopqrstu"
	for n := range len(base) {
		a := base[:n]
		b := string([]byte(a)) // another string of the same bytes
		require.True(t, sameName(a, b), a)
		for i := range n {
			c := []byte(a)
			c[i] = 'X'
			require.False(t, sameName(a, string(c)), "%s %s", a, c)
		}
		require.False(t, sameName(a, base[:n+1]))
	}
}
