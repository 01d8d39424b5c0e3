package busy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSince(t *testing.T) {
	var s Since
	t0 := time.Unix(1000, 0)
	_, busy := s.For(t0)
	require.False(t, busy, "idle")
	s.Start(t0)
	d, busy := s.For(t0)
	require.True(t, busy, "busy from the start")
	require.Zero(t, d)
	d, _ = s.For(t0.Add(3 * time.Second))
	require.Equal(t, 3*time.Second, d)
	d, _ = s.For(t0.Add(-time.Second))
	require.Zero(t, d, "a clock that went back reads as no time")
	s.Done()
	_, busy = s.For(t0.Add(time.Hour))
	require.False(t, busy)
}
