package httpout

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFailover(t *testing.T) {
	down := errors.New("refused")
	var f Failover
	tried := func(up ...bool) (int, []int, error) {
		var order []int
		idx, err := f.Do(context.Background(), len(up), func(i int) error {
			order = append(order, i)
			if up[i] {
				return nil
			}
			return down
		})
		return idx, order, err
	}

	idx, order, err := tried(true, true)
	require.Equal(t, 0, idx)
	require.Equal(t, []int{0}, order)
	require.NoError(t, err)

	idx, order, err = tried(false, true, true)
	require.Equal(t, 1, idx)
	require.Equal(t, []int{0, 1}, order)
	require.ErrorIs(t, err, down, "the errors of the URLs tried before")
	require.Equal(t, 1, f.Current())

	idx, order, err = tried(true, true, true)
	require.Equal(t, 1, idx, "starts where the last answer came from")
	require.Equal(t, []int{1}, order)
	require.NoError(t, err)

	idx, order, err = tried(true, false, false)
	require.Equal(t, 0, idx, "wraps around")
	require.Equal(t, []int{1, 2, 0}, order)
	require.Error(t, err)

	idx, order, err = tried(false, false)
	require.Equal(t, -1, idx)
	require.Equal(t, []int{0, 1}, order)
	require.ErrorIs(t, err, down)

	f.Reset()
	require.Equal(t, 0, f.Current())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	idx, err = f.Do(ctx, 3, func(int) error { return down })
	require.Equal(t, -1, idx)
	require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 1, "a cancelled context stops the round")
}
