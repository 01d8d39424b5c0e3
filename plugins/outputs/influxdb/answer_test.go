package influxdb

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScannerKeepsHeadAndTail(t *testing.T) {
	a := readAnswer(400, nil, strings.NewReader(`{"error":"partial write: points beyond retention policy dropped=12"}`), 10)
	require.True(t, a.truncated)
	a = readAnswer(400, nil, strings.NewReader(`{"error":"x \ud83d\ude00 \u00e9"}`), 0)
	require.Equal(t, "x 😀 é", a.msg)
	require.Equal(t, -1, a.dropped)
}
