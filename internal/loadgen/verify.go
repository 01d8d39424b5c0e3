package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// VerifyConfig says where to count the lines that arrived.
type VerifyConfig struct {
	URL  string // the InfluxDB base URL, such as http://127.0.0.1:8086; loopback only
	DB   string
	Wait time.Duration // how long to wait for the count to settle; 0 means 30s
	// Poll is the pause between queries; 0 means 250ms.
	Poll time.Duration
	// Settle is how long the count must stay the same to be final when it is short of
	// the lines sent; 0 means 3s. An agent in between flushes on an interval, so the
	// count can pause for a whole flush interval and then grow again.
	Settle time.Duration
	Clock  Clock // nil means the wall clock
}

// VerifyResult compares the lines sent with the lines the database holds.
type VerifyResult struct {
	Sent    int64   `json:"sent"` // lines put on the wire, failed requests included
	Arrived int64   `json:"arrived"`
	Percent float64 `json:"percent"`
	// Settled is false when the count was still changing, or short of Sent, when the wait
	// ran out.
	Settled bool    `json:"settled"`
	WaitSec float64 `json:"wait_sec"`
}

// Verify counts, in an InfluxDB reached over /query, the points of the measurements in ms
// with timestamps in [firstTS, lastTS], which are exactly the lines of one run. It polls
// until the count equals sent, or stays the same and above zero for vc.Settle, or the wait
// runs out.
func Verify(ctx context.Context, vc VerifyConfig, ms []CountedMeasurement, firstTS, lastTS, sent int64) (VerifyResult, error) {
	u, err := LoopbackURL(vc.URL)
	if err != nil {
		return VerifyResult{}, err
	}
	if vc.Wait <= 0 {
		vc.Wait = 30 * time.Second
	}
	if vc.Poll <= 0 {
		vc.Poll = 250 * time.Millisecond
	}
	if vc.Settle <= 0 {
		vc.Settle = 3 * time.Second
	}
	if vc.Clock == nil {
		vc.Clock = realClock{}
	}
	q := countQuery(ms, firstTS, lastTS)
	client := &http.Client{Transport: newHTTPTransport(1, 10*time.Second), Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	start := vc.Clock.Now()
	res := VerifyResult{Sent: sent}
	last, changed := int64(-1), start
	for {
		n, err := queryCount(ctx, client, u, vc.DB, q)
		if err != nil {
			return res, err
		}
		now := vc.Clock.Now()
		if n != last {
			last, changed = n, now
		}
		res.Arrived = n
		res.WaitSec = now.Sub(start).Seconds()
		if n == sent || (n > 0 && now.Sub(changed) >= vc.Settle) {
			res.Settled = true
			break
		}
		if now.Sub(start) >= vc.Wait {
			break
		}
		if err := vc.Clock.Sleep(ctx, vc.Poll); err != nil {
			return res, err
		}
	}
	if sent > 0 {
		res.Percent = 100 * float64(res.Arrived) / float64(sent)
	}
	return res, nil
}

// countQuery counts the field every line of a measurement carries, one statement per
// measurement.
func countQuery(ms []CountedMeasurement, firstTS, lastTS int64) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "SELECT count(%s) FROM %s WHERE time >= %d AND time <= %d",
			quoteIdent(m.Field), quoteIdent(m.Name), firstTS, lastTS)
	}
	return b.String()
}

// quoteIdent quotes an InfluxQL identifier.
func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// queryAnswer is the part of InfluxDB's /query answer that a count needs.
type queryAnswer struct {
	Error   string `json:"error"`
	Results []struct {
		Error  string `json:"error"`
		Series []struct {
			Values [][]json.Number `json:"values"`
		} `json:"series"`
	} `json:"results"`
}

func queryCount(ctx context.Context, client *http.Client, base *url.URL, db, q string) (int64, error) {
	u := *base
	u.Path += "/query"
	u.RawQuery = url.Values{"db": {db}, "q": {q}, "epoch": {"ns"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("query: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var ans queryAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return 0, fmt.Errorf("query: %w", err)
	}
	if ans.Error != "" {
		return 0, errors.New("query: " + ans.Error)
	}
	var total int64
	for _, r := range ans.Results {
		if r.Error != "" {
			return 0, errors.New("query: " + r.Error)
		}
		for _, s := range r.Series {
			for _, row := range s.Values {
				if len(row) < 2 {
					continue
				}
				n, err := strconv.ParseInt(row[1].String(), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("query: count %q: %w", row[1], err)
				}
				total += n
			}
		}
	}
	return total, nil
}
