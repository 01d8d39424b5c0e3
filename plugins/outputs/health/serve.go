package health

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// authorize requires basic_username and basic_password when either is set, as Telegraf's
// health output does: HTTP basic auth, or "Authorization: Token user:password".
func (h *Health) authorize(next http.Handler) http.Handler {
	if h.BasicUsername == "" && !h.BasicPassword.IsSet() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var user, pass string
		var ok bool
		if token, isToken := strings.CutPrefix(r.Header.Get("Authorization"), "Token "); isToken {
			user, pass, ok = strings.Cut(token, ":")
		} else {
			user, pass, ok = r.BasicAuth()
		}
		// Both compared, in constant time, whatever the first gave.
		userOK := morse.SecretEqual(h.BasicUsername, user)
		passOK := morse.SecretEqual(string(h.BasicPassword), pass)
		if !ok || !userOK || !passOK {
			w.Header().Set("WWW-Authenticate", `Basic realm="health"`)
			http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveHTTP answers any path and method with the verdict: the status text, and after a 503
// the reasons, one a line.
func (h *Health) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	status, reasons := h.verdict(h.now())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, http.StatusText(status))
	for _, r := range reasons {
		fmt.Fprintln(w, r)
	}
}

// verdict is the status to answer at now and, when unhealthy, why. The agent's own checks
// come first, then Telegraf's: no batch for max_time_between_metrics, default_status before
// the first batch, and the checks of the last batch. A change between healthy and
// unhealthy is logged, once.
func (h *Health) verdict(now time.Time) (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	reasons := h.engineReasons(now)
	if max := time.Duration(h.MaxTimeBetweenMetrics); max > 0 && now.Sub(h.lastWrite) >= max {
		reasons = append(reasons, fmt.Sprintf("no metrics written for %s (max_time_between_metrics = %s)",
			now.Sub(h.lastWrite).Round(time.Millisecond), max))
	}
	if h.written && h.failed != nil {
		reasons = append(reasons, "check failed on the last batch: "+h.failed.Error())
	}
	status := http.StatusOK
	switch {
	case len(reasons) > 0:
		status = http.StatusServiceUnavailable
	case !h.written:
		status = h.DefaultStatus
	}
	h.noteChange(status, reasons)
	return status, reasons
}

// engineReasons asks the agent what its own checks find; nothing outside an agent.
func (h *Health) engineReasons(now time.Time) []string {
	if h.engine == nil {
		return nil
	}
	var reasons []string
	add := func(what string, found []string) {
		for _, f := range found {
			reasons = append(reasons, what+": "+f)
		}
	}
	if h.UnhealthyWhenWedged {
		add("wedged", h.engine.Stuck(now, time.Duration(h.WedgedGrace)))
	}
	if d := time.Duration(h.UnhealthyAfterFailing); d > 0 {
		add("backing off", h.engine.Failing(now, d))
	}
	if f := h.UnhealthyAboveBufferFill; f > 0 {
		add("buffer filling", h.engine.Filling(f))
	}
	return reasons
}

// noteChange logs a turn from healthy to unhealthy, with the reasons, and back.
func (h *Health) noteChange(status int, reasons []string) {
	unhealthy := len(reasons) > 0
	if unhealthy == h.unhealthy {
		return
	}
	h.unhealthy = unhealthy
	if unhealthy {
		h.log.Warn("health endpoint turns unhealthy", "status", status, "reasons", strings.Join(reasons, "; "))
		return
	}
	h.log.Info("health endpoint is healthy again", "status", status)
}
