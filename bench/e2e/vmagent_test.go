package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
)

const smallCapture = `# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 10
node_cpu_seconds_total{cpu="0",mode="user"} 2
node_cpu_seconds_total{cpu="1",mode="idle"} 11
node_cpu_seconds_total{cpu="1",mode="user"} 3
# HELP node_load1 1m load average.
# TYPE node_load1 gauge
node_load1 0.5
`

func TestScaleExpositionAddsCPUsWithinEachFamily(t *testing.T) {
	out, n := scaleExposition([]byte(smallCapture), 9)
	require.Equal(t, 9, n)
	text := string(out)
	require.Equal(t, 9, strings.Count(text, "\n")-strings.Count(text, "#"))
	// CPU 0's samples are copied for CPUs 2 and 3, inside their family, before node_load1.
	require.Less(t, strings.Index(text, `node_cpu_seconds_total{cpu="3",mode="user"} 2`), strings.Index(text, "# HELP node_load1"))
	// The parser of the text format reads it all, every series distinct.
	p, err := prometheus.New(prometheus.Options{MetricVersion: 1}, parsers.Settings{})
	require.NoError(t, err)
	seen := map[string]bool{}
	require.NoError(t, p.Parse(out, func(m morse.Metric) {
		key := m.Name()
		for _, tag := range m.Tags() {
			key += "," + tag.Key + "=" + tag.Value
		}
		seen[key] = true
	}))
	require.Len(t, seen, 9)

	same, n := scaleExposition([]byte(smallCapture), 3)
	require.Equal(t, 5, n)
	require.Equal(t, smallCapture, string(same))
}

func TestParseRows(t *testing.T) {
	n, err := parseRows(strings.NewReader("vm_rows_inserted_total{type=\"influx\"} 7\nvm_rows_inserted_total{type=\"promremotewrite\"} 1.234567e+06\n"))
	require.NoError(t, err)
	require.Equal(t, int64(1234567), n)
	_, err = parseRows(strings.NewReader("vm_other 1\n"))
	require.Error(t, err)
}

func TestExposeServesGzipAndPlainOnEveryTarget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	x, err := newExposition([]byte(smallCapture))
	require.NoError(t, err)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveTargets(ctx, 3, x, pw) }()
	line, err := readLine(pr)
	require.NoError(t, err)
	addrs := strings.Fields(line)
	require.Len(t, addrs, 3)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
	for _, a := range addrs {
		req, _ := http.NewRequest(http.MethodGet, "http://"+a+"/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
		zr, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		body, err := io.ReadAll(zr)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, smallCapture, string(body))
	}
	resp, err := hc.Get("http://" + addrs[0] + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, smallCapture, string(body))
	hc.CloseIdleConnections()
	cancel()
	require.NoError(t, <-done)
}

func readLine(r io.Reader) (string, error) {
	var b bytes.Buffer
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			return b.String(), err
		}
		if one[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(one[0])
	}
}
