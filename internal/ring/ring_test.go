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
			// Advance the head so that PushFront has to wrap below index 0.
			for range tc.capacity - 1 {
				r.Push(-1)
			}
			r.PopFront(nil, tc.capacity-1)
			r.PushAll(tc.held)
			require.Equal(t, tc.wantEvicted, r.PushFront(tc.back))
			require.Equal(t, tc.want, drain(r))
		})
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
