package influxdblistener

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/freelist"
)

// version is the InfluxDB version the listener answers as. 1.8 is the release that added
// /api/v2/write and /health, both of which the listener serves, so clients that choose
// their protocol by version choose one that works.
const version = "1.8.10"

// Header values shared by every response; net/http only reads them.
var (
	versionHeader = []string{version}
	buildHeader   = []string{"OSS"}
	jsonHeader    = []string{"application/json"}
)

// handler serves the listener's endpoints.
type handler struct {
	l   *InfluxDBListener
	acc morse.Accumulator
	// lineMode is the accumulator's PrefersLines, when it has one: lines that go unchanged
	// to outputs that write line protocol need not be taken apart.
	lineMode func() bool
	// waits is set when writes wait for room in the outputs: backpressure is on and the
	// accumulator can tell (morse.RoomWaiter).
	waits bool
	// batches are the metric batches the writes being parsed gather their metrics in, kept
	// for the writes after them (see keptBuffers).
	batches freelist.List[morse.MetricBatch]
}

// keptBuffers is how many request buffers of each kind are kept between requests, across
// garbage collections (internal/freelist): batches of parsed metrics, by each listener, and
// read chunks, by the listeners together. Requests beyond that many at once use buffers of
// their own, which the garbage collector takes back.
const keptBuffers = 16

func newHandler(l *InfluxDBListener, acc morse.Accumulator) *handler {
	_, rw := acc.(morse.RoomWaiter)
	h := &handler{l: l, acc: acc, waits: l.Backpressure && rw}
	h.batches.Max = keptBuffers
	h.batches.New = func() *morse.MetricBatch { return morse.NewMetricBatch(acc, metricBatchSize) }
	if la, ok := acc.(morse.LineAccumulator); ok {
		h.lineMode = la.PrefersLines
	}
	return h
}

// ServeHTTP routes a request. Like InfluxDB, every response says which version answered.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.l.c.requests.Incr()
	hdr := w.Header()
	hdr["X-Influxdb-Build"] = buildHeader
	hdr["X-Influxdb-Version"] = versionHeader
	switch r.URL.Path {
	case "/write":
		h.serveWrite(w, r, false)
	case "/api/v2/write":
		h.serveWrite(w, r, true)
	case "/ping":
		h.servePing(w, r)
	case "/health":
		h.serveHealth(w, r)
	case "/query":
		h.serveQuery(w, r)
	default:
		http.NotFound(w, r)
	}
}

// allow answers 405 unless the request uses one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	httpError(w, "http: method not allowed", http.StatusMethodNotAllowed)
	return false
}

// servePing answers like InfluxDB: 204, or 200 with the version when verbose is asked for.
func (h *handler) servePing(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	h.l.c.pings.Incr()
	if v := r.URL.Query().Get("verbose"); v != "" && v != "0" && v != "false" {
		w.Header()["Content-Type"] = jsonHeader
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"version":"` + version + `"}`))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveHealth answers with InfluxDB 1.8's health document.
func (h *handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"checks":[],"message":"ready for queries and writes","name":"influxdb","status":"pass","version":"` + version + `"}`))
}

// serveQuery answers every query with an empty result, as Telegraf's listener does: the
// listener stores nothing to query, but clients that send CREATE DATABASE when they connect
// must not fail for it.
func (h *handler) serveQuery(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodPost) || !h.authorized(w, r, r.URL.Query()) {
		return
	}
	h.l.c.queries.Incr()
	w.Header()["Content-Type"] = jsonHeader
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"results":[]}`))
}

// authorized checks the request's credentials when auth is configured, and answers 401 as
// InfluxDB does when they are missing or wrong. Credentials are read the way InfluxDB reads
// them: u and p in the query first, then the Authorization header, either "Basic ..." or
// "Token ...". A token is checked against token, and, when basic auth is configured, also
// as InfluxDB 1.8's "username:password" token for v2 clients.
func (h *handler) authorized(w http.ResponseWriter, r *http.Request, q url.Values) bool {
	l := h.l
	if l.TokenSharedSecret.IsSet() {
		if msg := l.checkJWT(r); msg != "" {
			l.c.authFail.Incr()
			httpError(w, msg, http.StatusUnauthorized)
			return false
		}
		return true
	}
	basic, token := l.BasicUsername != "", l.Token.IsSet()
	if !basic && !token {
		return true
	}
	matchBasic := func(user, pass string) bool {
		// Both comparisons always run, so the time taken does not tell which one failed.
		u := morse.SecretEqual(l.BasicUsername, user)
		p := l.BasicPassword.Matches(pass)
		return basic && u && p
	}
	ok := false
	switch user, pass, tok, found := credentials(r, q); {
	case !found:
		l.c.authFail.Incr()
		httpError(w, "unable to parse authentication credentials", http.StatusUnauthorized)
		return false
	case tok != "":
		u, p, _ := strings.Cut(tok, ":")
		ok = l.Token.Matches(tok) || matchBasic(u, p)
	default:
		ok = matchBasic(user, pass)
	}
	if !ok {
		l.c.authFail.Incr()
		httpError(w, "authorization failed", http.StatusUnauthorized)
	}
	return ok
}

// credentials finds the request's user and password, or its token.
func credentials(r *http.Request, q url.Values) (user, pass, token string, found bool) {
	if u, p := q.Get("u"), q.Get("p"); u != "" && p != "" {
		return u, p, "", true
	}
	auth := r.Header.Get("Authorization")
	if scheme, rest, ok := strings.Cut(auth, " "); ok && scheme == "Token" && rest != "" {
		return "", "", rest, true
	}
	if u, p, ok := r.BasicAuth(); ok {
		return u, p, "", true
	}
	return "", "", "", false
}

// maxErrorHeader is how much of a message InfluxDB copies into X-Influxdb-Error.
const maxErrorHeader = 1024

// httpError answers as InfluxDB 1.x does: the status, {"error":"msg"} and a newline, and
// the message in X-Influxdb-Error, or for 401 a WWW-Authenticate challenge instead.
func httpError(w http.ResponseWriter, msg string, code int) {
	hdr := w.Header()
	if code == http.StatusUnauthorized {
		hdr.Set("WWW-Authenticate", `Basic realm="InfluxDB"`)
	} else {
		hdr.Set("X-Influxdb-Error", headerValue(msg))
	}
	hdr["Content-Type"] = jsonHeader
	w.WriteHeader(code)
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	_, _ = w.Write(append(b, '\n'))
}

// httpErrorV2 answers as InfluxDB 2.x does, {"code":"...","message":"..."}, for the 413 and
// 503 of /api/v2/write, whose code v2 clients read to decide whether to retry. The 400
// answers on that endpoint keep InfluxDB 1.8's shape, which is what 1.8 gives there.
func httpErrorV2(w http.ResponseWriter, msg, code string, status int) {
	hdr := w.Header()
	hdr.Set("X-Influxdb-Error", headerValue(msg))
	hdr["Content-Type"] = jsonHeader
	w.WriteHeader(status)
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	_, _ = w.Write(append(b, '\n'))
}

// headerValue cuts msg to maxErrorHeader bytes at a character boundary and replaces control
// bytes, which a quoted line may hold but a header must not.
func headerValue(msg string) string {
	if len(msg) > maxErrorHeader {
		cut := maxErrorHeader
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
}
