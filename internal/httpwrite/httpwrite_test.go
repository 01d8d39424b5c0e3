package httpwrite

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"30", 30 * time.Second},
		{" 30 ", 30 * time.Second},
		{"999999", MaxRetryAfter},
		{now.Add(time.Minute).Format(http.TimeFormat), time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter},
		{"soon", 0},
	} {
		t.Run(tc.value, func(t *testing.T) {
			require.Equal(t, tc.want, RetryAfter(http.Header{"Retry-After": {tc.value}}, now))
		})
	}
}

// AppendGzip appends one gzip stream that decodes to the input, from many goroutines at once
// (the writers are pooled).
func TestAppendGzip(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			src := []byte(strings.Repeat("cpu,host=h"+string(rune('a'+i))+" v=1 1\n", 100*(i+1)))
			prefix := []byte("keep")
			out := AppendGzip(prefix, src)
			require.Equal(t, "keep", string(out[:4]), "appended, not overwritten")
			zr, err := gzip.NewReader(bytes.NewReader(out[4:]))
			require.NoError(t, err)
			got, err := io.ReadAll(zr)
			require.NoError(t, err)
			require.Equal(t, src, got)
		})
	}
	wg.Wait()
}

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

// TestBodyKeep: a body is kept for later writes unless its buffers grew past maxKeptBody.
func TestBodyKeep(t *testing.T) {
	var b Body
	b.Build([]morse.Metric{morse.NewMetric("m", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(0, 0))},
		func(dst []byte, m morse.Metric) ([]byte, error) { return append(dst, m.Name()...), nil },
		func(m morse.Metric) morse.Metric { return m }, true)
	require.True(t, b.Keep())
	b.plain = make([]byte, 0, maxKeptBody+1)
	require.False(t, b.Keep(), "grown for an unusually large batch")
}
