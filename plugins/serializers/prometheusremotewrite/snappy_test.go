package prometheusremotewrite

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"
)

// TestSnappyCompatible checks that golang/snappy (Telegraf's and Prometheus' decoder, whose
// format VictoriaMetrics reads too) decodes what appendSnappy writes with s2, for blocks
// below and above snappy's 64 KiB fragments and s2's larger tables, compressible and not,
// appended after bytes already in dst.
func TestSnappyCompatible(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	repetitive := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString("\n\x0a\x08__name__\x12\x0fcpu_usage_idle\n\x0a\x04host\x12\x06server")
			b.Write(random(9))
		}
		return b.Bytes()[:n]
	}
	for _, n := range []int{0, 1, 16, 17, 100, 65535, 65536, 65537, 1 << 20, 5 << 20} {
		for i, src := range [][]byte{random(n), repetitive(n)} {
			prefix := []byte("kept")
			got := appendSnappy(prefix, src)
			require.Equal(t, "kept", string(got[:4]), "dst's bytes stay")
			dec, err := snappy.Decode(nil, got[4:])
			require.NoError(t, err, "%d bytes", n)
			require.True(t, bytes.Equal(src, dec), "%d bytes decode to the input", n)
			if i == 1 && n > 1000 {
				require.Less(t, len(got), n*3/4, "%d repetitive bytes are compressed", n)
			}
		}
	}
}
