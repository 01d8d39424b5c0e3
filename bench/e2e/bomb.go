package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// bombInflatedMiB is what the gzip bomb inflates to: far past the listener's max_body_size,
// so a listener that buffers the body before it checks the size grows by up to that limit.
const bombInflatedMiB = 400

// bombResult is what the agent did with a gzip bomb.
type bombResult struct {
	BodyBytes   int     `json:"body_bytes"`
	InflatedMiB int     `json:"inflated_mib"`
	Status      int     `json:"status"`
	AnswerSec   float64 `json:"answer_sec"`
	IdleRSSMiB  float64 `json:"idle_rss_mib"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// GrowthMiB is the peak RSS (VmHWM) after the answer less the RSS before the request.
	GrowthMiB float64 `json:"growth_mib"`
	Error     string  `json:"error,omitempty"`
}

// gzipBomb compresses mib MiB of one valid line, repeated.
func gzipBomb(mib int) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	line := []byte("bomb,host=a value=1i 1700000000000000000\n")
	block := bytes.Repeat(line, (1<<20)/len(line))
	for written := 0; written < mib<<20; written += len(block) {
		if _, err := zw.Write(block); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// runBomb starts an agent with the HTTP listener, lets it settle, posts the gzip bomb and
// compares its peak RSS afterwards with its RSS before.
func (e *env) runBomb(ctx context.Context, stderr io.Writer) bombResult {
	fmt.Fprintln(stderr, "morse-bench: matrix gzip-bomb ...")
	var res bombResult
	if err := e.bomb(ctx, &res); err != nil {
		res.Error = err.Error()
	}
	return res
}

func (e *env) bomb(ctx context.Context, res *bombResult) error {
	body, err := gzipBomb(bombInflatedMiB)
	if err != nil {
		return err
	}
	res.BodyBytes, res.InflatedMiB = len(body), bombInflatedMiB
	sink, err := e.freshSink(0)
	if err != nil {
		return err
	}
	a, err := e.startAgent(ctx, scenario{Name: "gzip-bomb", Transport: "http", Input: "influxdb_listener"}, sink.addr)
	if err != nil {
		return err
	}
	defer func() { _, _, _ = a.proc.Stop(10 * time.Second) }()
	// Let the agent finish starting: its first gathers and flushes are not the bomb's.
	started := time.Now()
	if err := a.proc.WaitFor(ctx, 5*time.Second, "settling", func() bool { return time.Since(started) >= 2*time.Second }); err != nil {
		return err
	}
	idle, err := statusKiB(a.proc.PID(), "VmRSS")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.addr+"/write?db=bench", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "gzip")
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{Proxy: nil}}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("posting the bomb: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	res.AnswerSec, res.Status = time.Since(start).Seconds(), resp.StatusCode
	peak, err := statusKiB(a.proc.PID(), "VmHWM")
	if err != nil {
		return err
	}
	res.IdleRSSMiB, res.PeakRSSMiB = float64(idle)/1024, float64(peak)/1024
	res.GrowthMiB = float64(peak-idle) / 1024
	return nil
}
