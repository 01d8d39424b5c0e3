package influxdblistener

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// tooLarge is the 413 answer to a body over 4 KiB that kept n lines.
func tooLarge(n int) string {
	return fmt.Sprintf("http: request body too large: more than max_body_size (4096 bytes, counted after decompression); %d lines accepted before the limit", n)
}

// TestBodyLimitCountsDecompressedBytes refuses bodies over max_body_size, plain, chunked
// and gzip, where a small gzip body that inflates beyond the limit is refused too. A plain
// body whose Content-Length is over the limit is refused before it is read; of the others,
// the lines parsed before the limit are kept, and the answer says how many. After each the
// listener still serves. /api/v2/write answers in InfluxDB 2's shape.
func TestBodyLimitCountsDecompressedBytes(t *testing.T) {
	const limit = 4 << 10
	l := newListener(t, func(l *InfluxDBListener) { l.MaxBodySize = limit })
	acc, st := start(t, l)
	c := newClient(t, l.Addr(), nil)
	big := bytes.Repeat([]byte("m v=1i 1\n"), limit/9+1) // just over the limit
	require.Greater(t, len(big), limit)

	a := c.must("POST", "/write", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, errorBody(tooLarge(0)), a.body)
	require.Equal(t, tooLarge(0), a.header.Get("X-Influxdb-Error"))
	c.healthy()

	// Without Content-Length the limit is found while reading.
	req, err := http.NewRequest("POST", c.base+"/write", io.MultiReader(bytes.NewReader(big)))
	require.NoError(t, err)
	req.ContentLength = -1 // unknown: the body is sent chunked
	resp, err := c.hc.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Equal(t, errorBody(tooLarge(limit/9)), string(b), "every whole line within the limit was kept")
	require.Equal(t, 1+limit/9, acc.NMetrics())
	c.healthy()

	bomb := gzipped(bytes.Repeat([]byte("m v=1i 1\n"), 100_000)) // 900 kB of lines
	require.Less(t, len(bomb), limit, "the gzip body itself is small")
	a = c.must("POST", "/write", bomb, "Content-Encoding", "gzip")
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, errorBody(tooLarge(limit/9)), a.body)
	a = c.must("POST", "/api/v2/write?bucket=x", bomb, "Content-Encoding", "gzip")
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Equal(t, `{"code":"request too large","message":"`+tooLarge(limit/9)+`"}`+"\n", a.body)
	c.healthy()

	// A gzip body of empty blocks decompresses to nothing, whatever its size: the limit holds
	// for what arrives too.
	var empty bytes.Buffer
	zw := gzip.NewWriter(&empty)
	for empty.Len() <= 2*limit {
		require.NoError(t, zw.Flush())
	}
	require.NoError(t, zw.Close())
	a = c.must("POST", "/write", empty.Bytes(), "Content-Encoding", "gzip")
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status, a.body)

	fits := gzipped(bytes.Repeat([]byte("m v=1i 1\n"), limit/9))
	a = c.must("POST", "/write", fits, "Content-Encoding", "gzip")
	require.Equal(t, http.StatusNoContent, a.status, a.body)
	require.Equal(t, 3+4*(limit/9), acc.NMetrics(), "three health writes, three bodies cut at the limit and the body that fit")
	require.Equal(t, int64(5), st.Counter("body_too_large").Get())

	bad := bytes.Repeat([]byte("m v=\n"), limit/5+1)
	a = c.must("POST", "/write", gzipped(bad), "Content-Encoding", "gzip")
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Contains(t, a.body, "0 lines accepted and 819 rejected (first: line 1: unable to parse 'm v=': missing field value)")
	require.Equal(t, 3+4*(limit/9), acc.NMetrics(), "a body of bad lines keeps nothing")
}

// TestUnfinishedHeadersAreClosedByTheTimeout sends half a request and waits: the server
// closes the connection after read_timeout, and still serves afterwards.
func TestUnfinishedHeadersAreClosedByTheTimeout(t *testing.T) {
	l := newListener(t, func(l *InfluxDBListener) { l.ReadTimeout = morse.Duration(200 * time.Millisecond) })
	start(t, l)
	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /write HTTP/1.1\r\nHost: morse\r\nContent-Length: 6\r\n"))
	require.NoError(t, err)
	begun := time.Now()
	readUntilClosed(t, conn)
	require.GreaterOrEqual(t, time.Since(begun), 150*time.Millisecond, "closed by the timeout, not at once")
	newClient(t, l.Addr(), nil).healthy()
}

// TestIdleAndStalledConnectionsAreClosedByTheTimeout: a keep-alive connection left idle
// after its answer, and a request whose body stops short, are both closed once read_timeout
// passes, not at once, and the listener serves as before.
func TestIdleAndStalledConnectionsAreClosedByTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, request, answer string
	}{
		{"idle after a write", "POST /write?db=x HTTP/1.1\r\nHost: morse\r\nContent-Length: 9\r\n\r\nidle v=1\n", "HTTP/1.1 204"},
		{"a body that stops short", "POST /write?db=x HTTP/1.1\r\nHost: morse\r\nContent-Length: 100\r\n\r\nshort v=1\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newListener(t, func(l *InfluxDBListener) { l.ReadTimeout = morse.Duration(200 * time.Millisecond) })
			start(t, l)
			conn, err := net.Dial("tcp", l.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write([]byte(tc.request))
			require.NoError(t, err)
			begun := time.Now()
			got := readUntilClosed(t, conn)
			require.GreaterOrEqual(t, time.Since(begun), 150*time.Millisecond, "closed by the timeout, not at once")
			require.True(t, strings.HasPrefix(got, tc.answer), "answered %q", got)
			newClient(t, l.Addr(), nil).healthy()
		})
	}
}

// TestConnectionsOverTheCapAreRefusedOnlyWhenAllAreBusy holds the only slot with a request
// whose body is on its way: a second connection is closed at once and counted. Once that
// request is answered, its keep-alive connection is idle, and a new connection takes its
// slot instead of being refused.
func TestConnectionsOverTheCapAreRefusedOnlyWhenAllAreBusy(t *testing.T) {
	l := newListener(t, func(l *InfluxDBListener) { l.MaxConnections = 1 })
	acc, st := start(t, l)
	holder, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer holder.Close()
	_, err = holder.Write([]byte("POST /write?db=x HTTP/1.1\r\nHost: morse\r\nContent-Length: 9\r\n\r\nbusy"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return st.Counter("requests_received").Get() == 1 }, waitFor, time.Millisecond,
		"the request is being served")

	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /ping HTTP/1.1\r\nHost: morse\r\n\r\n"))
	require.Empty(t, readUntilClosed(t, conn), "refused without an answer")
	require.Equal(t, int64(1), st.Counter("connections_refused").Get())

	_, err = holder.Write([]byte(" v=1\n"))
	require.NoError(t, err)
	require.NoError(t, holder.SetReadDeadline(time.Now().Add(waitFor)))
	resp, err := http.ReadResponse(bufio.NewReader(holder), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, 1, acc.NMetrics())

	// net/http marks the holder idle only after its answer is sent, so a connection that
	// arrives in between still finds it busy and is refused; the next one takes its slot.
	require.Eventually(t, func() bool {
		a, err := newClient(t, l.Addr(), nil).do("POST", "/write?db=x", []byte("after v=1\n"))
		return err == nil && a.status == http.StatusNoContent
	}, waitFor, time.Millisecond, "a new connection takes the idle holder's slot")
	readUntilClosed(t, holder) // closed to make room for the client
	require.Equal(t, int64(1), st.Counter("connections_evicted").Get())
	require.Equal(t, 2, acc.NMetrics())
}

// TestAuth refuses writes without or with wrong credentials as InfluxDB does, and accepts
// basic auth, u and p, a token, and a v2 "Token user:password".
func TestAuth(t *testing.T) {
	l := newListener(t, func(l *InfluxDBListener) {
		l.BasicUsername, l.BasicPassword, l.Token = "writer", "s3cret", "tok-123"
	})
	acc, st := start(t, l)
	c := newClient(t, l.Addr(), nil)
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	line := []byte("m v=1\n")

	refused := []struct {
		path, auth, msg string
	}{
		{"/write", "", "unable to parse authentication credentials"},
		{"/write", basic("writer", "wrong"), "authorization failed"},
		{"/write", basic("other", "s3cret"), "authorization failed"},
		{"/write?u=writer&p=wrong", "", "authorization failed"},
		{"/api/v2/write", "Token tok-124", "authorization failed"},
		{"/api/v2/write", "Bearer tok-123", "unable to parse authentication credentials"},
		{"/query", "", "unable to parse authentication credentials"},
	}
	for _, r := range refused {
		a := c.must("POST", r.path, line, "Authorization", r.auth)
		require.Equal(t, http.StatusUnauthorized, a.status, r)
		require.Equal(t, errorBody(r.msg), a.body, r)
		require.Equal(t, `Basic realm="InfluxDB"`, a.header.Get("WWW-Authenticate"))
	}
	require.Equal(t, int64(len(refused)), st.Counter("authentication_failures").Get())

	accepted := []struct{ path, auth string }{
		{"/write", basic("writer", "s3cret")},
		{"/write?u=writer&p=s3cret", ""},
		{"/api/v2/write?bucket=b", "Token tok-123"},
		{"/api/v2/write?bucket=b", "Token writer:s3cret"},
	}
	for _, r := range accepted {
		a := c.must("POST", r.path, line, "Authorization", r.auth)
		require.Equal(t, http.StatusNoContent, a.status, r)
	}
	require.Equal(t, len(accepted), acc.NMetrics())
	require.Equal(t, http.StatusNoContent, c.must("GET", "/ping", nil).status, "ping needs no credentials")
	require.Equal(t, "<redacted>", l.BasicPassword.String())
	require.NotContains(t, strings.Join([]string{l.Token.String(), l.BasicPassword.GoString()}, " "), "s3cret")
}

// TestTLS serves HTTPS with mutual TLS: a client with a certificate writes, a TLS 1.1 client
// and a client without a certificate are refused.
func TestTLS(t *testing.T) {
	certs := testutil.NewCerts(t)
	l := newListener(t, func(l *InfluxDBListener) {
		l.Cert, l.Key, l.AllowedCACerts = certs.ServerCert, certs.ServerKey, []string{certs.CA}
	})
	acc, _ := start(t, l)

	newClient(t, l.Addr(), certs.ClientTLS(true)).healthy()

	old := certs.ClientTLS(true)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	_, err := newClient(t, l.Addr(), old).do("POST", "/write", []byte("m v=1\n"))
	require.ErrorContains(t, err, "protocol version not supported")

	_, err = newClient(t, l.Addr(), certs.ClientTLS(false)).do("POST", "/write", []byte("m v=1\n"))
	require.ErrorContains(t, err, "certificate required")

	a := newClient(t, l.Addr(), nil).must("POST", "/write", []byte("m v=1\n"))
	require.Equal(t, http.StatusBadRequest, a.status, "plain HTTP to an HTTPS listener: %s", a.body)
	require.Equal(t, 1, acc.NMetrics(), "only the client with a certificate delivered")
}

// TestStopWaitsForTheServer stops a listener with an idle keep-alive connection: Stop
// returns, the connection is closed, and no goroutine of the listener is left.
func TestStopWaitsForTheServer(t *testing.T) {
	l := newListener(t)
	start(t, l)
	c := newClient(t, l.Addr(), nil)
	c.healthy()
	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	l.Stop()
	require.Nil(t, l.Addr())
	readUntilClosed(t, conn)
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, fn := range []string{"(*InfluxDBListener).serve", "(*handler)", "(*limitListener)"} {
		require.NotContains(t, stacks, fn, "a goroutine outlived Stop")
	}
	_, err = c.do("GET", "/ping", nil)
	require.Error(t, err, "nothing listens any more")
}

// TestAnswerPastWriteTimeoutIsNotSent: write_timeout runs from the end of the headers, so
// a request whose body comes in later than that is still read and its lines kept, but its
// answer is not written: the connection closes without one. The listener serves as before.
func TestAnswerPastWriteTimeoutIsNotSent(t *testing.T) {
	const writeTimeout = 100 * time.Millisecond
	l := newListener(t, func(l *InfluxDBListener) { l.WriteTimeout = morse.Duration(writeTimeout) })
	acc, _ := start(t, l)
	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body := "late v=1\n"
	_, err = conn.Write([]byte("POST /write?db=x HTTP/1.1\r\nHost: morse\r\nContent-Length: 9\r\n\r\n"))
	require.NoError(t, err)

	// Wait past the write deadline on the client's own read deadline, which also shows that
	// nothing is answered before the body is complete.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(3*writeTimeout)))
	n, err := conn.Read(make([]byte, 1))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "no answer before the body: %v", err)
	require.Zero(t, n)

	_, err = conn.Write([]byte(body))
	require.NoError(t, err)
	require.Empty(t, readUntilClosed(t, conn), "the answer came after write_timeout")
	// The lines were kept before the answer was tried, so they are in by the time it fails.
	got := acc.Metrics()
	require.Len(t, got, 1)
	require.Equal(t, "late", got[0].Name())
	newClient(t, l.Addr(), nil).healthy()
}
