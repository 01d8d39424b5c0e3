package httpout

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps a server's Retry-After, so that a bogus answer cannot park an output
// for days; the agent's own backoff caps at a minute, so this is generous on purpose.
const MaxRetryAfter = time.Hour

// RetryAfter reads a Retry-After header: seconds, or an HTTP date. Zero means none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(secs, 0), int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}
