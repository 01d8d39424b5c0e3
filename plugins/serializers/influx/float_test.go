package influx

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendFloatMatchesStrconv: the fast path writes what strconv's shortest 'g' writes,
// for decimals of every length around its bounds and for arbitrary bit patterns.
func TestAppendFloatMatchesStrconv(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 3.003, 1e-4, 9.9999e-5, 0.00010000001, 1e6, 999999.999999999,
		999999.9999999999, 123456, 1234567, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0000000001, 1e-9, 5e-324, math.MaxFloat64,
		math.Nextafter(1e-4, 0), math.Nextafter(1e-4, 1), math.Nextafter(1e6, 0), 100, 1e21}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		frac := rng.IntN(12)
		v := float64(rng.Int64N(2_000_000_000_000)) / math.Pow10(frac)
		if rng.IntN(2) == 0 {
			v = -v
		}
		values = append(values, v, math.Float64frombits(rng.Uint64()), rng.Float64()*math.Pow10(rng.IntN(14)-6))
	}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		want := strconv.AppendFloat(nil, v, 'g', -1, 64)
		require.Equal(t, string(want), string(appendFloat(nil, v)), "%b", v)
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	for _, bc := range []struct {
		name string
		v    float64
	}{{"short", 42.125}, {"long", 0.123456789012345}} {
		b.Run(bc.name+"/strconv", func(b *testing.B) {
			buf := make([]byte, 0, 32)
			for b.Loop() {
				buf = strconv.AppendFloat(buf[:0], bc.v, 'g', -1, 64)
			}
		})
		b.Run(bc.name+"/appendFloat", func(b *testing.B) {
			buf := make([]byte, 0, 32)
			for b.Loop() {
				buf = appendFloat(buf[:0], bc.v)
			}
		})
	}
}
