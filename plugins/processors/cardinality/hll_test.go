package cardinality

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

func TestEstimateAccuracy(t *testing.T) {
	for _, n := range []int{0, 1, 3, 10, 100, 1000, 5000, 10_000, 20_000, 100_000, 1_000_000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			w := newWindow(0)
			bytes := 0
			for i := range n {
				_, b := w.add(xxhash.Sum64String("value-" + strconv.Itoa(i)))
				bytes += b
			}
			est := w.estimate()
			t.Logf("%d distinct values: estimate %.1f (%+.2f%%), %d bytes", n, est, 100*(est-float64(n))/math.Max(1, float64(n)), w.size())
			tolerance := math.Max(1, 0.05*float64(n)) // about 3 standard errors
			require.InDelta(t, n, est, tolerance, "estimate of %d distinct values", n)
			require.Equal(t, w.size(), bytes, "the bytes reported as grown add up to the window's size")
			require.LessOrEqual(t, w.size(), registers, "one slot holds at most its dense registers")
			// Values seen before leave the estimate unchanged.
			for i := range min(n, 1000) {
				grew, b := w.add(xxhash.Sum64String("value-" + strconv.Itoa(i)))
				require.False(t, grew)
				require.Zero(t, b)
			}
			require.Equal(t, est, w.estimate())
		})
	}
}

// A value stays in the estimate for as long as the window's slots hold it, at least the
// window (slots-1 slots) and less than slots slots, then leaves it.
func TestWindowForgets(t *testing.T) {
	w := newWindow(100)
	for i := range 500 {
		w.add(xxhash.Sum64String(strconv.Itoa(i)))
	}
	require.InDelta(t, 500, w.estimate(), 10)
	w.advance(100 + slots - 1)
	require.InDelta(t, 500, w.estimate(), 10, "still within the window")
	for i := range 10 {
		w.add(xxhash.Sum64String("new" + strconv.Itoa(i)))
	}
	freed := w.advance(100 + slots)
	require.Positive(t, freed)
	require.InDelta(t, 10, w.estimate(), 1, "the first slot left; the ten recent values stay")
	w.advance(100 + 3*slots)
	require.Zero(t, w.estimate())
	require.Zero(t, w.size())
	w.advance(5)
	require.Equal(t, int64(100+3*slots), w.epoch, "a clock that went back leaves the window where it is")
}

func TestSlotTurnsDense(t *testing.T) {
	var s slot
	grown := 0
	for i := range registers {
		grown += s.set(uint32(i), 1)
	}
	require.NotNil(t, s.dense, "a full slot is dense")
	require.Nil(t, s.sparse)
	require.Equal(t, registers, grown)
	require.Equal(t, uint8(1), s.get(registers-1))
}

func TestSlotOfNegativeEpochs(t *testing.T) {
	require.Equal(t, slots-1, slotOf(-1))
	require.Equal(t, 0, slotOf(-slots))
	require.Equal(t, int64(-1), floorDiv(-1, 10))
	require.Equal(t, int64(0), floorDiv(9, 10))
}

// TestSlotFind: the branch-free search finds what a plain binary search finds, for every
// register index around lists of every length up to a few hundred, with the extremes
// (index 0 and the last register) among them.
func TestSlotFind(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		idx := rng.Perm(registers)[:n]
		if n > 2 {
			idx[0], idx[1] = 0, registers-1
		}
		slices.Sort(idx)
		var s slot
		for _, i := range idx {
			s.sparse = append(s.sparse, uint32(i)<<8|1)
		}
		probes := append(slices.Clone(idx), 0, 1, registers-2, registers-1)
		for _, i := range idx {
			probes = append(probes, max(i-1, 0), min(i+1, registers-1))
		}
		for _, q := range probes {
			wantAt, wantOK := slices.BinarySearchFunc(s.sparse, uint32(q), func(e, q uint32) int { return cmp.Compare(e>>8, q) })
			at, ok := s.find(uint32(q))
			require.Equal(t, wantAt, at, "n=%d idx=%d", n, q)
			require.Equal(t, wantOK, ok, "n=%d idx=%d", n, q)
		}
	}
}
