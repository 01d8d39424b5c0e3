package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/morse-agent/morse/influxquery"
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
	client, err := influxquery.NewClient(influxquery.ClientOptions{URL: u.String(), Timeout: 10 * time.Second,
		UserAgent: "morse-bench", HTTPClient: &http.Client{Transport: newHTTPTransport(1, 10*time.Second),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})
	if err != nil {
		return VerifyResult{}, err
	}
	defer client.Close()
	start := vc.Clock.Now()
	res := VerifyResult{Sent: sent}
	last, changed := int64(-1), start
	for {
		n, err := queryCount(ctx, client, vc.DB, q)
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
			influxquery.QuoteIdent(m.Field), influxquery.QuoteIdent(m.Name), firstTS, lastTS)
	}
	return b.String()
}

// queryCount runs the count statements and adds up their counts.
func queryCount(ctx context.Context, client *influxquery.Client, db, q string) (int64, error) {
	resp, err := client.Query(ctx, q, influxquery.WithDatabase(db), influxquery.WithEpoch("ns"))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range resp.Results {
		for _, s := range r.Series {
			for _, row := range s.Values {
				if len(row) < 2 {
					continue
				}
				n, ok := row[1].(int64)
				if !ok {
					return 0, fmt.Errorf("query: count %v is %T, not an integer", row[1], row[1])
				}
				total += n
			}
		}
	}
	return total, nil
}
