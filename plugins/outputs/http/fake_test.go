package http_test

// Answers and requests that the real servers of prometheus_test.go and vm_test.go never
// give or check: scripted statuses, Retry-After, 413, OAuth2, the request's own shape.

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	httpout "github.com/morse-agent/morse/plugins/outputs/http"
)

// sink records each request (its lines, ungzipped) and answers with answer.
type sink struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]string
}

func startSink(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, lines []string)) (*sink, string) {
	t.Helper()
	s := &sink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			require.NoError(t, err)
			body = zr
		}
		var lines []string
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		s.mu.Lock()
		s.reqs, s.bodies = append(s.reqs, r), append(s.bodies, lines)
		s.mu.Unlock()
		answer(w, r, lines)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func answer(status int, msg string, h ...string) func(http.ResponseWriter, *http.Request, []string) {
	return func(w http.ResponseWriter, _ *http.Request, _ []string) {
		for i := 0; i+1 < len(h); i += 2 {
			w.Header().Set(h[i], h[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, msg)
	}
}

func someMetrics(t *testing.T, n int) []morse.Metric {
	var ms []morse.Metric
	for i := range n {
		ms = append(ms, metric(t, "m", map[string]string{"i": string(rune('a' + i))}, map[string]any{"v": float64(i)}, time.Unix(1700000000, 0)))
	}
	return ms
}

// TestAnswers: what each answer makes of a write.
func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rw       bool
		nonRetry []int
		answer   func(http.ResponseWriter, *http.Request, []string)
		check    func(t *testing.T, err error)
	}{
		{"503 with Retry-After", false, nil, answer(503, "busy", "Retry-After", "7"), func(t *testing.T, err error) {
			re, ok := errors.AsType[*morse.RetryableError](err)
			require.True(t, ok, "%v", err)
			require.Equal(t, 7*time.Second, re.RetryAfter)
		}},
		{"429", true, nil, answer(429, "slow down"), retried},
		{"401", false, nil, answer(401, "who"), func(t *testing.T, err error) {
			retried(t, err)
			require.ErrorIs(t, err, morse.ErrUnauthorized)
		}},
		{"400", false, nil, answer(400, "bad"), dropped(httpout.ReasonRefused)},
		{"503 listed in non_retryable_statuscodes", false, []int{503}, answer(503, "down"), dropped(httpout.ReasonNonRetryable)},
		{"Thanos' 409 for an out-of-order sample", true, nil, answer(409, "store locally for endpoint: conflict: out of order sample"), rejected(httpout.ReasonOutOfOrder)},
		{"Mimir's duplicate sample", true, nil, answer(400, "failed pushing to ingester: user=x: the sample has been rejected because another sample with the same timestamp, but a different value, has already been ingested (err-mimir-sample-duplicate-timestamp)"), rejected(httpout.ReasonDuplicate)},
		{"Mimir's too old sample", true, nil, answer(400, "err-mimir-sample-timestamp-too-old"), rejected(httpout.ReasonOutOfBounds)},
		{"a 400 of remote write that names no sample", true, nil, answer(400, "snappy: corrupt input"), dropped(httpout.ReasonRefused)},
		{"out of order is no sample's fault in line protocol", false, nil, answer(400, "out of order sample"), dropped(httpout.ReasonRefused)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startSink(t, tc.answer)
			o := connected(t, url, func(o *httpout.HTTP) {
				o.NonRetryableStatusCodes = tc.nonRetry
				if tc.rw {
					remoteWrite(o)
				}
			})
			err := o.Write(testutil.Context(t), someMetrics(t, 3))
			require.Error(t, err)
			tc.check(t, err)
		})
	}
}

func retried(t *testing.T, err error) {
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
}

func dropped(reason string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		require.Equal(t, morse.OutcomeDropped, morse.Classify(err), "%v", err)
		pe, _ := errors.AsType[*morse.PermanentError](err)
		require.Equal(t, reason, pe.Reason)
		_, isRejected := errors.AsType[*morse.RejectedError](err)
		require.False(t, isRejected)
	}
}

func rejected(reason string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		re, ok := errors.AsType[*morse.RejectedError](err)
		require.True(t, ok, "%v", err)
		require.Equal(t, reason, re.Reason)
		require.Equal(t, -1, re.Index, "the receiver names a sample, not its metric")
	}
}

// TestRequestShape: method, basic auth, Telegraf's User-Agent and Content-Type rules,
// headers over the output's own, Host, gzip, and one request per metric without
// use_batch_format.
func TestRequestShape(t *testing.T) {
	s, url := startSink(t, answer(204, ""))
	o := connected(t, url+"/in?x=1", func(o *httpout.HTTP) {
		o.Method = "put"
		o.Username, o.Password = "u", "p"
		o.ContentEncoding = "gzip"
		o.UseBatchFormat = false
		o.Headers = map[string]morse.Secret{"Content-Type": "text/x-lp", "X-A": "1", "Host": "metrics.example"}
	})
	require.NoError(t, o.Write(testutil.Context(t), someMetrics(t, 3)))
	require.Equal(t, 3, s.count())
	for i, r := range s.reqs {
		require.Equal(t, http.MethodPut, r.Method)
		require.Equal(t, "/in?x=1", r.URL.String())
		u, p, ok := r.BasicAuth()
		require.True(t, ok)
		require.Equal(t, "u:p", u+":"+p)
		require.Equal(t, "text/x-lp", r.Header.Get("Content-Type"))
		require.Equal(t, "1", r.Header.Get("X-A"))
		require.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
		require.Equal(t, "metrics.example", r.Host)
		require.Equal(t, "morse", r.Header.Get("User-Agent"))
		require.Len(t, s.bodies[i], 1)
		require.True(t, strings.HasPrefix(s.bodies[i][0], "m,i="+string(rune('a'+i))+" v="))
	}
}

// TestTooLarge: a 413 makes the output write the halves until each is accepted, and a
// single metric still too large is dropped under request_too_large.
func TestTooLarge(t *testing.T) {
	s, url := startSink(t, func(w http.ResponseWriter, _ *http.Request, lines []string) {
		if len(lines) > 2 || strings.Contains(strings.Join(lines, ""), "huge") {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	o := connected(t, url)
	ms := someMetrics(t, 7)
	ms[5] = metric(t, "huge", nil, map[string]any{"v": 1.0}, time.Unix(1700000000, 0))
	stats, drops := drained(t, o, ms)
	require.Equal(t, map[string][]morse.Metric{httpout.ReasonTooLarge: {ms[5]}}, drops)
	require.EqualValues(t, 6, stats.Written)
	stored := 0
	for _, b := range s.bodies {
		if len(b) <= 2 && !strings.Contains(strings.Join(b, ""), "huge") {
			stored += len(b)
		}
	}
	require.Equal(t, 6, stored)
}

// TestUnserializable: a metric the format cannot write (JSON has no NaN) is counted by its
// position, and the others are sent.
func TestUnserializable(t *testing.T) {
	s, url := startSink(t, answer(200, "ok"))
	o := connected(t, url, func(o *httpout.HTTP) { o.DataFormat = "json" })
	ms := someMetrics(t, 3)
	ms[1] = metric(t, "nan", nil, map[string]any{"v": math.NaN()}, time.Unix(1700000000, 0))
	err := o.Write(testutil.Context(t), ms)
	pw, ok := errors.AsType[*morse.PartialWriteError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, []int{1}, pw.Indices)
	require.Equal(t, morse.ReasonSerialize, pw.Reason)
	require.Equal(t, 1, s.count())
	require.Contains(t, s.bodies[0][0], `"name":"m"`)
	require.NotContains(t, s.bodies[0][0], `"name":"nan"`)
}

// TestOAuth2: the token of the client-credentials grant, fetched from token_url with the
// client's credentials, the scopes and the audience, is the bearer of every request, and is
// fetched once while it is valid.
func TestOAuth2(t *testing.T) {
	var tokenReqs []*http.Request
	var mu sync.Mutex
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		mu.Lock()
		tokenReqs = append(tokenReqs, r)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(tokens.Close)
	s, url := startSink(t, answer(204, ""))
	o := connected(t, url, func(o *httpout.HTTP) {
		o.OAuth2 = httpout.OAuth2{ClientID: "id", ClientSecret: "secret", TokenURL: tokens.URL, Audience: "aud", Scopes: []string{"a", "b"}}
	})
	for range 2 {
		require.NoError(t, o.Write(testutil.Context(t), someMetrics(t, 1)))
	}
	require.Equal(t, 2, s.count())
	for _, r := range s.reqs {
		require.Equal(t, "Bearer tok-1", r.Header.Get("Authorization"))
	}
	require.Len(t, tokenReqs, 1)
	r := tokenReqs[0]
	require.Equal(t, "client_credentials", r.PostForm.Get("grant_type"))
	require.Equal(t, "a b", r.PostForm.Get("scope"))
	require.Equal(t, "aud", r.PostForm.Get("audience"))
	id, secret, ok := r.BasicAuth()
	require.True(t, ok)
	require.Equal(t, "id:secret", id+":"+secret)
}

// TestValidate reports every problem at once, each under its key, and refuses Telegraf's
// keys that morse does not support by name.
func TestValidate(t *testing.T) {
	o := httpout.New()
	o.URL = "ftp://x"
	o.Method = "GET"
	o.DataFormat = "prometheusremotewrite"
	o.ContentEncoding = "gzip"
	o.NonRetryableStatusCodes = []int{204, 409}
	o.ClientID = "only-id"
	o.AwsService = "aps"
	o.GoogleCredentials = "/x.json"
	o.CookieAuthURL = "https://login"
	o.Headers = map[string]morse.Secret{"Bad Name": "x"}
	err := o.Validate()
	var keys []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if fe, ok := errors.AsType[*morse.FieldError](e); ok {
			keys = append(keys, fe.Key)
		}
	}
	walk(err)
	require.ElementsMatch(t, []string{"url", "method", "content_encoding", "non_retryable_statuscodes", "client_id",
		"aws_service", "google_application_credentials", "cookie_auth_url", "headers"}, keys, "%v", err)
	require.ErrorContains(t, err, "AWS Signature v4")
	require.NoError(t, httpout.New().Validate(), "the defaults")
}
