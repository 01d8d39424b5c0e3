package cardinality

import (
	"math"
	"math/bits"
	"slices"
)

// The guard counts distinct tag values with a HyperLogLog that slides: the window is cut
// into slots, each slot has registers of its own, and the estimate is that of the union of
// the live slots (the maximum of each register over them). Moving to a new slot clears the
// oldest, so values seen before the window forget themselves without being stored.
//
// It is written here rather than taken from a library (such as axiomhq/hyperloglog) because
// the guard needs what a plain sketch does not give: the union of several slots kept up to
// date one register at a time, so that the estimate costs O(1) when a register grows
// instead of a pass over all of them, and an insert of an already-seen value that reads one
// register and allocates nothing, which is the guard's steady path.

const (
	// precision is p: 2^p registers. p = 12 gives a standard error of 1.04/64 = 1.6%, and
	// linear counting, which is more accurate still, up to 2.5 * 4096 = 10240 values, just
	// above the default max_values.
	precision = 12
	registers = 1 << precision

	// slots is how many slots the window holds; each is window/(slots-1) wide, so the
	// estimate covers at least the whole window and at most a quarter more.
	slots = 5

	// sparseMax is when a slot's sparse registers turn dense: 1024 entries of 4 bytes take
	// as much as the 4096 one-byte registers.
	sparseMax = registers / 4
)

// pow2neg[r] is 2^-r.
var pow2neg = func() (t [66]float64) {
	for r := range t {
		t[r] = math.Ldexp(1, -r)
	}
	return t
}()

// slot holds the registers of one slot: a sorted list of the non-zero ones (index<<8 |
// rank) while there are few, an array once there are many.
type slot struct {
	sparse []uint32
	dense  *[registers]uint8
}

func (s *slot) get(idx uint32) uint8 {
	if s.dense != nil {
		return s.dense[idx]
	}
	i, ok := s.find(idx)
	if !ok {
		return 0
	}
	return uint8(s.sparse[i])
}

// find returns where register idx is or would be in the sparse list. It is the steady
// path's inner loop: the indexes of a key's values are random, so a branch on each
// comparison would be mispredicted half the time. The halving loop below has no such
// branch: the step is masked with the sign of the difference, which is negative exactly
// when the entry is below idx (indexes have 12 bits, so it cannot overflow).
func (s *slot) find(idx uint32) (int, bool) {
	sp := s.sparse
	n := len(sp)
	if n == 0 {
		return 0, false
	}
	base := 0
	for n > 1 {
		half := n >> 1
		below := int(int64(sp[base+half-1]>>8)-int64(idx)) >> 63 // -1 or 0
		base += half & below
		n -= half
	}
	base -= int(int64(sp[base]>>8)-int64(idx)) >> 63
	return base, base < len(sp) && sp[base]>>8 == idx
}

// set raises register idx to rank, which the caller has checked is higher, and returns how
// many bytes the slot grew by.
func (s *slot) set(idx uint32, rank uint8) int {
	if s.dense != nil {
		s.dense[idx] = rank
		return 0
	}
	i, ok := s.find(idx)
	if ok {
		s.sparse[i] = idx<<8 | uint32(rank)
		return 0
	}
	if len(s.sparse) < cap(s.sparse) {
		s.sparse = slices.Insert(s.sparse, i, idx<<8|uint32(rank))
		return 0
	}
	if len(s.sparse) >= sparseMax {
		d := new([registers]uint8)
		for _, e := range s.sparse {
			d[e>>8] = uint8(e)
		}
		d[idx] = rank
		freed := 4 * cap(s.sparse)
		s.dense, s.sparse = d, nil
		return registers - freed
	}
	// Grow by doubling, but never past sparseMax, so that a sparse slot never takes more
	// than a dense one would.
	grown := make([]uint32, len(s.sparse)+1, min(max(8, 2*cap(s.sparse)), sparseMax))
	copy(grown, s.sparse[:i])
	grown[i] = idx<<8 | uint32(rank)
	copy(grown[i+1:], s.sparse[i:])
	before := cap(s.sparse)
	s.sparse = grown
	return 4 * (cap(grown) - before)
}

// size is the bytes the slot holds.
func (s *slot) size() int {
	if s.dense != nil {
		return registers
	}
	return 4 * cap(s.sparse)
}

// window is the sliding sketch of one tag key.
type window struct {
	slot  [slots]slot
	epoch int64 // the newest slot's number; slot i holds epochs ≡ i (mod slots)
	// The union's registers are not stored: sum and zeros, which is all the estimate
	// needs, are kept up to date as registers grow and recomputed when a slot expires.
	sum   float64 // Σ 2^-max over all registers
	zeros int     // registers whose maximum is 0
	// last is the hash added last in the current slot. Metrics of one series repeat their
	// values, so this spares most steady-path inserts the register lookup.
	last uint64
}

func newWindow(epoch int64) window {
	return window{epoch: epoch, sum: registers, zeros: registers}
}

// slotOf is the slot that holds epoch e, for epochs before 1970 too.
func slotOf(e int64) int { return int((e%slots + slots) % slots) }

// hashParts splits a 64-bit hash into a register index (the top p bits) and a rank: one
// more than the number of leading zeros of the rest.
func hashParts(h uint64) (uint32, uint8) {
	idx := uint32(h >> (64 - precision))
	rest := h<<precision | 1<<(precision-1) // the guard bit caps the rank at 64-p+1
	return idx, uint8(bits.LeadingZeros64(rest) + 1)
}

// add records a hashed value in the current slot. It reports whether the union grew, which
// is when the estimate may have risen, and how many bytes the slot grew by.
func (w *window) add(h uint64) (grew bool, bytes int) {
	if h == w.last {
		return false, 0
	}
	w.last = h
	idx, rank := hashParts(h)
	cur := &w.slot[slotOf(w.epoch)]
	if cur.get(idx) >= rank {
		return false, 0 // the steady path: a value this slot has seen
	}
	var old uint8
	for i := range w.slot {
		old = max(old, w.slot[i].get(idx))
	}
	bytes = cur.set(idx, rank)
	if rank <= old {
		return false, bytes
	}
	w.sum += pow2neg[rank] - pow2neg[old]
	if old == 0 {
		w.zeros--
	}
	return true, bytes
}

// advance moves the window to epoch, clearing the slots that fall out of it, and returns the
// bytes freed. A clock that went back leaves the window where it is.
func (w *window) advance(epoch int64) int {
	if epoch <= w.epoch {
		return 0
	}
	freed := 0
	for e := max(w.epoch+1, epoch-slots+1); e <= epoch; e++ {
		s := &w.slot[slotOf(e)]
		freed += s.size()
		*s = slot{}
	}
	w.epoch, w.last = epoch, 0
	w.recount()
	return freed
}

// recount computes sum and zeros from the live slots.
func (w *window) recount() {
	var union [registers]uint8
	for i := range w.slot {
		s := &w.slot[i]
		if s.dense != nil {
			for j, r := range s.dense {
				union[j] = max(union[j], r)
			}
			continue
		}
		for _, e := range s.sparse {
			union[e>>8] = max(union[e>>8], uint8(e))
		}
	}
	w.sum, w.zeros = 0, 0
	for _, r := range union {
		w.sum += pow2neg[r]
		if r == 0 {
			w.zeros++
		}
	}
}

// size is the bytes the window's slots hold.
func (w *window) size() int {
	n := 0
	for i := range w.slot {
		n += w.slot[i].size()
	}
	return n
}

// estimate is the number of distinct values in the window: linear counting while many
// registers are still zero, where it is the more accurate, HyperLogLog's harmonic mean
// above. A 64-bit hash needs no correction for large numbers.
func (w *window) estimate() float64 {
	const m = float64(registers)
	e := 0.7213 / (1 + 1.079/m) * m * m / w.sum
	if e <= 2.5*m && w.zeros > 0 {
		return m * math.Log(m/float64(w.zeros))
	}
	return e
}
