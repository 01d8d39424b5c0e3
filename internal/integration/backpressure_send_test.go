package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// sendHTTP writes n lines flat out as bodies of perBody lines over conns connections at
// once, each line with its own sequence number and timestamp, and returns how long it took
// and every answer's status.
func (r *bpRig) sendHTTP(t *testing.T, url string, n, perBody, conns int) (time.Duration, map[int]int) {
	t.Helper()
	tr := &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	base := time.Now().Add(-time.Hour).UnixNano()
	bodies := make(chan [2]int, n/perBody+1)
	for from := r.next; from < r.next+n; from += perBody {
		bodies <- [2]int{from, min(from+perBody, r.next+n)}
	}
	close(bodies)
	var mu sync.Mutex
	statuses := map[int]int{}
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			var buf bytes.Buffer
			for b := range bodies {
				buf.Reset()
				for i := b[0]; i < b[1]; i++ {
					fmt.Fprintf(&buf, "bp,host=sender n=%di %d\n", i, base+int64(i))
				}
				status := -1 // a transport error
				if resp, err := hc.Post(url, "text/plain", &buf); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					status = resp.StatusCode
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.next += n
	return time.Since(start), statuses
}
