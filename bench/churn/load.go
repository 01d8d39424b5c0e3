package churn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// workload is the churn: every simulated interval, each measurement gets one metric per
// fixed identifier and one per live rotating identifier; the rotating ones move on by
// newPerInterval each interval, so that new values arrive at a steady rate and never come
// back.
type workload struct {
	measurements, fixed, rotating, newPerInterval int
	interval                                      time.Duration
}

// perRound is the metrics of one interval.
func (w workload) perRound() int { return w.measurements * (w.fixed + w.rotating) }

// round appends the line protocol of interval k, stamped at ts, to b.
func (w workload) round(b []byte, k int64, ts time.Time) []byte {
	for j := range w.measurements {
		for i := range w.fixed + w.rotating {
			b = append(b, 'm')
			b = strconv.AppendInt(b, int64(j), 10)
			b = append(b, ",host=web-"...)
			b = strconv.AppendInt(b, int64(i%8), 10)
			if i < w.fixed {
				b = append(b, ",id=f"...)
				b = strconv.AppendInt(b, int64(i), 10)
			} else {
				b = append(b, ",id=r"...)
				b = strconv.AppendInt(b, k*int64(w.newPerInterval)+int64(i-w.fixed), 10)
			}
			b = append(b, " value="...)
			b = strconv.AppendInt(b, k, 10)
			b = append(b, "i "...)
			b = strconv.AppendInt(b, ts.UnixNano()+int64(i), 10)
			b = append(b, '\n')
		}
	}
	return b
}

// distinct is the identifiers a measurement has seen after rounds rounds.
func (w workload) distinct(rounds int64) int64 {
	if rounds == 0 {
		return 0
	}
	return int64(w.fixed+w.rotating) + int64(w.newPerInterval)*(rounds-1)
}

// feeder posts the rounds to the agent's listener, paced by the compressed clock.
type feeder struct {
	w        workload
	url      string
	client   *http.Client
	compress float64   // simulated seconds per wall second
	simStart time.Time // the simulated time of round 0
	// The counters are read by the sampler while run goes on.
	rounds, sent, errors atomic.Int64
	lastError            atomic.Pointer[error]
}

// run sends round after round until ctx ends, each at its wall time; a round that is late
// goes at once, so the rate holds on average.
func (f *feeder) run(ctx context.Context) {
	wallPerRound := time.Duration(float64(f.w.interval) / f.compress)
	start := time.Now()
	var buf []byte
	for k := int64(0); ; k++ {
		if d := time.Until(start.Add(time.Duration(k) * wallPerRound)); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			return
		}
		buf = f.w.round(buf[:0], k, f.simStart.Add(time.Duration(k)*f.w.interval))
		// The round goes whole even if the run ends meanwhile, so that what was sent is
		// known exactly; the client's timeout bounds it.
		if err := f.post(context.WithoutCancel(ctx), buf); err != nil {
			f.errors.Add(1)
			f.lastError.Store(&err)
		} else {
			f.sent.Add(int64(f.w.perRound()))
		}
		f.rounds.Store(k + 1)
	}
}

func (f *feeder) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("listener answered %s", resp.Status)
	}
	return nil
}
