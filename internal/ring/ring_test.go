package ring

import (
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

// TestRingEmptiedStartsAtFirstSlot: a ring that is emptied again and again, as a lightly
// used output's buffer is at each flush, uses only its first slots, so the pages of the
// others are never touched; a ring that is never emptied goes round as before.
func TestRingEmptiedStartsAtFirstSlot(t *testing.T) {
	r := New[int](1000)
	for round := range 10_000 {
		r.PushAll([]int{round, round + 1, round + 2})
		require.Equal(t, []int{round}, r.PopFront(nil, 1))
		require.Equal(t, 1, r.head, "not empty: the head moves on")
		require.Equal(t, []int{round + 1, round + 2}, drain(r))
		require.Zero(t, r.head, "emptied: back to the first slot")
	}
	for i := range 1500 {
		r.Push(i)
		if i%2 == 1 {
			r.PopFront(nil, 1)
		}
	}
	require.Equal(t, 750, r.Len())
	require.Equal(t, 750, r.head, "never emptied: the head walks on")
	require.Equal(t, 750, r.Peek(0))
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
