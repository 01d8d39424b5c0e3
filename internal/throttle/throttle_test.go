package throttle_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/throttle"
)

func TestThrottleCountsWhatItHoldsBack(t *testing.T) {
	th := throttle.New(time.Minute)
	now := time.Unix(1000, 0)
	ok, n := th.Allow(now)
	require.True(t, ok)
	require.Zero(t, n)
	for i := range 5 {
		ok, _ = th.Allow(now.Add(time.Duration(i) * time.Second))
		require.False(t, ok)
	}
	ok, n = th.Allow(now.Add(time.Minute))
	require.True(t, ok)
	require.Equal(t, 5, n)

	var out strings.Builder
	log := slog.New(slog.NewTextHandler(&out, nil))
	th = throttle.New(time.Hour)
	for range 3 {
		th.Log(log, slog.LevelWarn, "bad line", "line", 1)
	}
	require.Equal(t, 1, strings.Count(out.String(), "bad line"), out.String())
	require.Contains(t, out.String(), "similar_suppressed=0")
}
