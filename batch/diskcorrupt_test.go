package batch

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestDiskBufferCorruptionCountedExactly writes 10,000 metrics in batches of 1 to 64,
// damages the segment at rest, and reopens: the metrics read back plus those reported
// under morse.ReasonCorrupt are exactly the 10,000 written, and every metric read back is
// one that was written, whole.
func TestDiskBufferCorruptionCountedExactly(t *testing.T) {
	const total = 10_000
	damages := map[string]func(t *testing.T, seg string, data []byte) []byte{
		"zeroed 4 KiB at the start": func(_ *testing.T, _ string, data []byte) []byte {
			clear(data[:4096])
			return data
		},
		"zeroed 4 KiB in the middle": func(_ *testing.T, _ string, data []byte) []byte {
			clear(data[len(data)/2-2048 : len(data)/2+2048])
			return data
		},
		"zeroed 4 KiB at the end": func(_ *testing.T, _ string, data []byte) []byte {
			clear(data[len(data)-4096:])
			return data
		},
		"cut inside the final record's payload": func(t *testing.T, _ string, data []byte) []byte {
			off, hsize := lastRecord(t, data)
			return data[:off+hsize+5]
		},
		"cut inside the final record's header": func(t *testing.T, _ string, data []byte) []byte {
			off, _ := lastRecord(t, data)
			return data[:off+9]
		},
	}
	for _, seed := range []uint64{3, 4, 5, 7} { // seeds that hit headers too
		damages[fmt.Sprintf("20 bytes flipped, seed %d", seed)] = func(_ *testing.T, _ string, data []byte) []byte {
			rng := rand.New(rand.NewPCG(seed, 1))
			for range 20 {
				data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
			}
			return data
		}
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b := newTestDiskBuffer(t, 2*total, Eviction{}, DiskOptions{Dir: dir})
			rng := rand.New(rand.NewPCG(7, 7))
			for n := 0; n < total; {
				per := min(1+rng.IntN(64), total-n)
				b.AddBatch(testutil.SeqMetrics(n, n+per))
				n += per
			}
			require.NoError(t, b.Close())
			segs, err := filepath.Glob(filepath.Join(dir, "*.seg"))
			require.NoError(t, err)
			require.Len(t, segs, 1)
			data, err := os.ReadFile(segs[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(segs[0], damage(t, segs[0], data), 0o600))

			var ev evictions
			b2 := newTestDiskBuffer(t, 2*total, ev.eviction(false), DiskOptions{Dir: dir})
			var got []morse.Metric
			for {
				batch := b2.Batch(nil, 1000)
				if len(batch) == 0 {
					break
				}
				got = append(got, batch...)
				b2.Accept(batch)
			}
			ev.mu.Lock()
			defer ev.mu.Unlock()
			require.Len(t, ev.reasons, 1, "only corruption: %v", ev.reasons)
			require.Equal(t, total, len(got)+ev.reasons[morse.ReasonCorrupt], "read %d, reported %v", len(got), ev.reasons)
			last := -1
			for _, m := range got {
				seq := testutil.Seqs([]morse.Metric{m})[0]
				require.Greater(t, seq, last, "in order, once")
				require.Equal(t, testutil.ToPoint(testutil.SeqMetric(seq)), testutil.ToPoint(m), "whole")
				last = seq
			}
		})
	}
}

// lastRecord finds the newest record of a segment through its trailer: the payload length,
// bit 31 set when the header is of 32 bytes (record format 2) rather than 24.
func lastRecord(t *testing.T, data []byte) (off, hsize int) {
	t.Helper()
	v := binary.LittleEndian.Uint32(data[len(data)-4:])
	hsize = 24
	if v&(1<<31) != 0 {
		hsize = 32
	}
	off = len(data) - 4 - hsize - int(v&^(1<<31))
	require.GreaterOrEqual(t, off, 0)
	return off, hsize
}
