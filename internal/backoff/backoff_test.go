package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCeilingDoublesUpToMax(t *testing.T) {
	p := New(time.Second, time.Minute)
	p.Rand = func() float64 { return 1 }
	var got []time.Duration
	for range 9 {
		got = append(got, p.Next())
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		require.Equal(t, want[i]*time.Second, got[i], "attempt %d", i+1)
	}
	require.Equal(t, 9, p.Attempts())
	p.Reset()
	require.Equal(t, time.Second, p.Ceiling(), "a success starts over")
}

func TestFullJitterSpansZeroToCeiling(t *testing.T) {
	tests := []struct {
		rand float64
		want time.Duration
	}{
		{0, 0},
		{0.25, 1 * time.Second},
		{0.5, 2 * time.Second},
	}
	for _, tc := range tests {
		p := New(time.Second, time.Minute)
		p.Rand = func() float64 { return tc.rand }
		p.Next()
		p.Next() // the third attempt has a ceiling of 4s
		require.Equal(t, tc.want, p.Next())
	}
}

func TestManyFailuresDoNotOverflow(t *testing.T) {
	p := New(time.Second, time.Minute)
	p.Rand = func() float64 { return 1 }
	for range 10000 {
		require.LessOrEqual(t, p.Next(), time.Minute)
	}
}
