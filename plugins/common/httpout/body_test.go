package httpout

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

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
