package ring

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func drain(r *Ring[int]) []int { return r.PopFront(nil, r.Len()) }

func TestRingWrapsAroundAndEvictsOldest(t *testing.T) {
	r := New[int](3)
	for i := range 3 {
		require.False(t, r.Push(i))
	}
	require.True(t, r.Push(3), "a full ring evicts")
	require.True(t, r.Push(4))
	require.Equal(t, 3, r.Len())
	require.Equal(t, 2, r.Peek(0))
	require.Equal(t, []int{2, 3, 4}, drain(r))
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
			r := New[int](tc.capacity)
			// An emptied ring starts at slot 0, so PushFront has to wrap below it.
			for range tc.capacity - 1 {
				r.Push(-1)
			}
			r.PopFront(nil, tc.capacity-1)
			require.Zero(t, r.head)
			r.PushAll(tc.held)
			require.Equal(t, tc.wantEvicted, r.PushFront(tc.back))
			require.Equal(t, tc.want, drain(r))
		})
	}
}

// TestRingKeepsToFirstSlots: a ring that is emptied, or nearly, again and again, as an
// output's buffer is at each flush, uses only its first slots, so the pages of the others
// are never touched; a ring that holds more than each pop takes goes round as before.
func TestRingKeepsToFirstSlots(t *testing.T) {
	r := New[int](1000)
	for round := range 10_000 {
		r.PushAll([]int{round, round + 1, round + 2})
		require.Equal(t, []int{round}, r.PopFront(nil, 1))
		require.Equal(t, 1, r.head, "more left than popped: the head moves on")
		require.Equal(t, []int{round + 1}, r.PopFront(nil, 1))
		require.Zero(t, r.head, "no more left than popped: moved back to the first slot")
		require.Equal(t, round+2, r.Peek(0))
		require.Zero(t, r.buf[2], "the slot moved from is cleared")
		require.Equal(t, []int{round + 2}, drain(r))
		require.Zero(t, r.head, "emptied: back to the first slot")
	}
	for i := range 600 {
		r.Push(i)
	}
	for i := range 200 {
		r.PopFront(nil, 1)
		r.Push(600 + i)
	}
	require.Equal(t, 600, r.Len())
	require.Equal(t, 200, r.head, "never nearly emptied: the head walks on")
	require.Equal(t, 200, r.Peek(0))
}

// TestRingAgainstSlice drives a ring and a plain slice with the same random pushes, pops and
// put-backs, and checks that they hold the same elements in the same order throughout.
func TestRingAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const capacity = 50
	r := New[int](capacity)
	var want []int
	next := 0
	for step := range 20_000 {
		switch op := rng.IntN(3); op {
		case 0:
			vs := make([]int, rng.IntN(20))
			for i := range vs {
				vs[i], next = next, next+1
			}
			evicted := r.PushAll(vs)
			want = append(want, vs...)
			require.Equal(t, max(0, len(want)-capacity), evicted, "step %d", step)
			want = want[evicted:]
		case 1:
			n := rng.IntN(25)
			got := r.PopFront(nil, n)
			k := min(n, len(want))
			require.Equal(t, append([]int{}, want[:k]...), append([]int{}, got...), "step %d", step)
			want = want[k:]
		case 2: // a batch taken out, arrivals meanwhile, and the batch put back
			back := r.PopFront(nil, rng.IntN(25))
			want = want[len(back):]
			vs := make([]int, rng.IntN(10))
			for i := range vs {
				vs[i], next = next, next+1
			}
			want = append(want, vs...)
			want = want[r.PushAll(vs):]
			evicted := r.PushFront(back)
			want = append(slices.Clone(back), want...)
			require.Equal(t, max(0, len(want)-capacity), evicted, "step %d", step)
			want = want[evicted:]
		}
		require.Equal(t, len(want), r.Len(), "step %d", step)
		for i := range want {
			require.Equal(t, want[i], r.Peek(i), "step %d, element %d", step, i)
		}
	}
}

func TestRingPopFrontClearsSlots(t *testing.T) {
	r := New[*int](2)
	v := 1
	r.Push(&v)
	r.PopFront(nil, 1)
	require.Nil(t, r.buf[0], "a popped slot no longer holds a pointer, so it can be collected")
}

func TestRingCapacityAtLeastOne(t *testing.T) {
	require.Equal(t, 1, New[int](0).Cap())
}
