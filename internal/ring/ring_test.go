package ring

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tests' rings hold ints with their negatives as side values, so that every check of
// the elements checks too that the side values moved with them.
type intRing = Ring[int, int]

func newRing(capacity int) *intRing { return New[int, int](capacity) }

func sides(vs []int) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = -v
	}
	return out
}

func push(r *intRing, v int) bool { return r.Push(v, -v) }

func pushAll(r *intRing, vs []int) int { return r.PushAll(vs, sides(vs)) }

func pushFront(r *intRing, vs []int) int { return r.PushFront(vs, sides(vs)) }

// popFront pops as PopFront does and fails unless the side values came with the elements.
func popFront(t *testing.T, r *intRing, most int) []int {
	t.Helper()
	vs, ss := r.PopFront([]int{}, []int{}, most)
	require.Equal(t, sides(vs), ss, "the side values follow the elements")
	return vs
}

func drain(t *testing.T, r *intRing) []int { return popFront(t, r, r.Len()) }

// peek returns the element at i, and fails unless its side value is with it.
func peek(t *testing.T, r *intRing, i int) int {
	t.Helper()
	require.Equal(t, -r.Peek(i), *r.Side(i), "the side value of element %d", i)
	require.Equal(t, r.Peek(i), *r.At(i))
	return r.Peek(i)
}

func TestRingWrapsAroundAndEvictsOldest(t *testing.T) {
	r := newRing(3)
	for i := range 3 {
		require.False(t, push(r, i))
	}
	require.True(t, push(r, 3), "a full ring evicts")
	require.True(t, push(r, 4))
	require.Equal(t, 3, r.Len())
	require.Equal(t, 2, peek(t, r, 0))
	require.Equal(t, []int{2, 3, 4}, drain(t, r))
	require.Zero(t, r.Len())
}

func TestRingPushFrontAcrossTheWrap(t *testing.T) {
	tests := []struct {
		name        string
		capacity    int
		held        []int
		back        []int
		wantEvicted int
		want        []int
	}{
		{"room for all", 5, []int{3, 4}, []int{1, 2}, 0, []int{1, 2, 3, 4}},
		{"exactly full", 4, []int{3, 4}, []int{1, 2}, 0, []int{1, 2, 3, 4}},
		{"oldest of the batch evicted", 3, []int{3, 4}, []int{0, 1, 2}, 2, []int{2, 3, 4}},
		{"no room at all", 2, []int{3, 4}, []int{1, 2}, 2, []int{3, 4}},
		{"empty ring", 3, nil, []int{7, 8}, 0, []int{7, 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.capacity)
			// An emptied ring starts at slot 0, so PushFront has to wrap below it.
			for range tc.capacity - 1 {
				push(r, -1)
			}
			popFront(t, r, tc.capacity-1)
			require.Zero(t, r.head)
			pushAll(r, tc.held)
			require.Equal(t, tc.wantEvicted, pushFront(r, tc.back))
			require.Equal(t, tc.want, drain(t, r))
		})
	}
}

// TestRingKeepsToFirstSlots: a ring that is emptied, or nearly, again and again, as an
// output's buffer is at each flush, uses only its first slots, so the pages of the others
// are never touched; a ring that holds more than each pop takes goes round as before.
func TestRingKeepsToFirstSlots(t *testing.T) {
	r := newRing(1000)
	for round := range 10_000 {
		pushAll(r, []int{round, round + 1, round + 2})
		require.Equal(t, []int{round}, popFront(t, r, 1))
		require.Equal(t, 1, r.head, "more left than popped: the head moves on")
		require.Equal(t, []int{round + 1}, popFront(t, r, 1))
		require.Zero(t, r.head, "no more left than popped: moved back to the first slot")
		require.Equal(t, round+2, peek(t, r, 0))
		require.Zero(t, r.buf[2], "the slot moved from is cleared")
		require.Zero(t, r.side[2], "and its side slot")
		require.Equal(t, []int{round + 2}, drain(t, r))
		require.Zero(t, r.head, "emptied: back to the first slot")
	}
	for i := range 600 {
		push(r, i)
	}
	for i := range 200 {
		popFront(t, r, 1)
		push(r, 600+i)
	}
	require.Equal(t, 600, r.Len())
	require.Equal(t, 200, r.head, "never nearly emptied: the head walks on")
	require.Equal(t, 200, peek(t, r, 0))
}

// TestRingAgainstSlice drives a ring and a plain slice with the same random pushes, pops and
// put-backs, and checks that they hold the same elements in the same order throughout.
func TestRingAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const capacity = 50
	r := newRing(capacity)
	var want []int
	next := 0
	for step := range 20_000 {
		switch op := rng.IntN(3); op {
		case 0:
			vs := make([]int, rng.IntN(20))
			for i := range vs {
				vs[i], next = next, next+1
			}
			evicted := pushAll(r, vs)
			want = append(want, vs...)
			require.Equal(t, max(0, len(want)-capacity), evicted, "step %d", step)
			want = want[evicted:]
		case 1:
			n := rng.IntN(25)
			got := popFront(t, r, n)
			k := min(n, len(want))
			require.Equal(t, append([]int{}, want[:k]...), append([]int{}, got...), "step %d", step)
			want = want[k:]
		case 2: // a batch taken out, arrivals meanwhile, and the batch put back
			back := popFront(t, r, rng.IntN(25))
			want = want[len(back):]
			vs := make([]int, rng.IntN(10))
			for i := range vs {
				vs[i], next = next, next+1
			}
			want = append(want, vs...)
			want = want[pushAll(r, vs):]
			evicted := pushFront(r, back)
			want = append(slices.Clone(back), want...)
			require.Equal(t, max(0, len(want)-capacity), evicted, "step %d", step)
			want = want[evicted:]
		}
		require.Equal(t, len(want), r.Len(), "step %d", step)
		for i := range want {
			require.Equal(t, want[i], peek(t, r, i), "step %d, element %d", step, i)
		}
	}
}

func TestRingPopFrontClearsSlots(t *testing.T) {
	r := New[*int, *int](2)
	v := 1
	r.Push(&v, &v)
	r.PopFront(nil, nil, 1)
	require.Nil(t, r.buf[0], "a popped slot no longer holds a pointer, so it can be collected")
	require.Nil(t, r.side[0], "nor its side slot")
}

func TestRingCapacityAtLeastOne(t *testing.T) {
	require.Equal(t, 1, New[int, struct{}](0).Cap())
}

// TestGrowsAsItFills: a ring allocates initialSlots at first and doubles as it fills, up to
// its capacity, keeping the order across the wrap of the old arrays; past the capacity it
// evicts as a full ring does. A ring that is never filled keeps its first slots.
func TestGrowsAsItFills(t *testing.T) {
	const capacity = 1000
	r := newRing(capacity)
	require.Equal(t, initialSlots, r.Allocated())
	require.Equal(t, capacity, r.Cap())

	// Walk the head round the first array so that the elements wrap when it grows.
	pushAll(r, seqInts(0, initialSlots))
	require.Equal(t, seqInts(0, 100), popFront(t, r, 100))
	pushAll(r, seqInts(initialSlots, initialSlots+100))
	require.Equal(t, initialSlots, r.Allocated(), "full but not grown yet")
	require.False(t, push(r, 9999), "a ring below its capacity grows rather than evicts")
	require.Equal(t, 2*initialSlots, r.Allocated())
	require.Equal(t, append(seqInts(100, initialSlots+100), 9999), drain(t, r))

	require.Equal(t, 0, pushAll(r, seqInts(0, capacity)))
	require.Equal(t, capacity, r.Allocated(), "doubling stops at the capacity")
	require.Equal(t, 5, pushAll(r, seqInts(capacity, capacity+5)), "then the oldest are evicted")
	require.Equal(t, seqInts(5, capacity+5), drain(t, r))

	small := newRing(10)
	require.Equal(t, 10, small.Allocated(), "a capacity under initialSlots is allocated whole")
}

// TestPushFrontGrows: a batch put back in front of a ring that has room below its capacity
// but not in its arrays grows them rather than evicting.
func TestPushFrontGrows(t *testing.T) {
	r := newRing(4 * initialSlots)
	pushAll(r, seqInts(1000, 1000+initialSlots))
	back := seqInts(0, initialSlots)
	require.Equal(t, 0, pushFront(r, back))
	require.Equal(t, 2*initialSlots, r.Allocated())
	require.Equal(t, append(seqInts(0, initialSlots), seqInts(1000, 1000+initialSlots)...), drain(t, r))
}

func seqInts(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
