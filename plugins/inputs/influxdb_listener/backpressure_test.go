package influxdblistener

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// roomAcc is an accumulator whose outputs are full on demand: WaitForRoom lets the first
// pass calls through, and then blocks each call until release is closed or its context
// ends, or, with hold set, for hold and only once. Every blocked call is announced on
// waiting.
type roomAcc struct {
	counting
	pass    int64
	hold    time.Duration
	calls   atomic.Int64
	waiting chan int64 // the metrics added when a call blocked
	release chan struct{}
}

func newRoomAcc(pass int64) *roomAcc {
	return &roomAcc{pass: pass, waiting: make(chan int64, 100), release: make(chan struct{})}
}

var _ morse.RoomWaiter = (*roomAcc)(nil)

// WaitForRoom blocks as configured.
func (a *roomAcc) WaitForRoom(ctx context.Context) error {
	call := a.calls.Add(1)
	if call <= a.pass || (a.hold > 0 && call > a.pass+1) {
		return nil
	}
	select {
	case a.waiting <- a.n.Load():
	default: // the test reads only the first few
	}
	if a.hold > 0 {
		select {
		case <-time.After(a.hold):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-a.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// countedBody is a request body that counts the bytes the handler has read of it.
type countedBody struct {
	r io.Reader
	n atomic.Int64
}

// Read reads and counts.
func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// Close does nothing.
func (*countedBody) Close() error { return nil }

// linesBody is n lines of 100 bytes each, newline included.
func linesBody(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "bp,host=h%08d value=%054di %d\n", i%1000, i, 1700000000000000000+int64(i))
	}
	if b.Len() != 100*n {
		panic("lines of the wrong length")
	}
	return b.Bytes()
}

// serveCounted runs one write through h in the background with a counted body.
func serveCounted(h *handler, path string, data []byte) (*countedBody, *httptest.ResponseRecorder, chan struct{}) {
	body := &countedBody{r: bytes.NewReader(data)}
	req := httptest.NewRequest("POST", path, body)
	req.ContentLength = int64(len(data))
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	return body, rec, done
}

// TestBackpressureHoldsTheBodyUntilThereIsRoom: the first look at the outputs, before the
// first read, finds room; the next, after waitEvery metrics, finds them full, and the write
// waits without reading more of its body; once they have room, the rest is read and the
// write succeeds with every line.
func TestBackpressureHoldsTheBodyUntilThereIsRoom(t *testing.T) {
	acc := newRoomAcc(1)
	h := handlerOnly(t, acc, func(l *InfluxDBListener) { l.BackpressureMaxWait = morse.Duration(time.Minute) })
	data := linesBody(3000) // 300 kB: several chunks
	body, rec, done := serveCounted(h, "/write?db=x", data)

	var added int64
	select {
	case added = <-acc.waiting:
	case <-time.After(waitFor):
		t.Fatal("the write never waited")
	}
	read := body.n.Load()
	require.Equal(t, int64(chunkSize), read, "one chunk was read, and no more")
	require.Equal(t, int64(waitEvery), added, "the write waits every waitEvery metrics")
	require.Never(t, func() bool { return body.n.Load() != read }, 50*time.Millisecond, time.Millisecond,
		"nothing more is read while the write waits")

	close(acc.release)
	<-done
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Equal(t, int64(3000), acc.n.Load())
	require.Equal(t, int64(len(data)), body.n.Load())
	require.Positive(t, h.l.c.waitNs.Get(), "the time held back is counted")
}

// TestBackpressurePastTheBoundIs503: a write that waits longer in all than
// backpressure_max_wait is answered 503 with Retry-After and InfluxDB's error shape, which
// says how many lines were accepted before the wait; the rest of the body is not read, and
// the rest of the chunk already read is not added.
func TestBackpressurePastTheBoundIs503(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		pass       int64
		answer     func(msg string) string
	}{
		{"v1, before any line", "/write?db=x", 0, func(msg string) string { return errorBody(msg) }},
		{"v2, after some lines", "/api/v2/write?bucket=x", 1, func(msg string) string {
			b, _ := json.Marshal(map[string]string{"code": "unavailable", "message": msg})
			return string(b) + "\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc := newRoomAcc(tc.pass)
			h := handlerOnly(t, acc, func(l *InfluxDBListener) { l.BackpressureMaxWait = morse.Duration(50 * time.Millisecond) })
			data := linesBody(3000)
			body, rec, done := serveCounted(h, tc.path, data)
			<-done
			require.Equal(t, http.StatusServiceUnavailable, rec.Code)
			require.Equal(t, "1", rec.Header().Get("Retry-After"))
			accepted := acc.n.Load()
			require.Equal(t, tc.pass*waitEvery, accepted)
			msg := fmt.Sprintf("the outputs are full and did not make room within backpressure_max_wait (50ms); "+
				"%d lines accepted before the wait, retry the rest after 1 s", accepted)
			require.Equal(t, tc.answer(msg), rec.Body.String())
			require.Equal(t, msg, rec.Header().Get("X-Influxdb-Error"))
			require.Less(t, body.n.Load(), int64(len(data)), "the rest of the body is left unread")
			require.Equal(t, int64(1), h.l.c.busy.Get())
			require.GreaterOrEqual(t, h.l.c.waitNs.Get(), int64(50*time.Millisecond))
		})
	}
}

// TestBackpressureBoundInTheLastReadIs503: net/http hands over the end of a body together
// with io.EOF. A wait that passes the bound while the lines of that last read are parsed
// refuses the rest of them, and the write must then be answered 503 like any other refused
// write, not 204: a 204 would tell the sender that lines never added were stored.
func TestBackpressureBoundInTheLastReadIs503(t *testing.T) {
	acc := newRoomAcc(1) // the look before the only read finds room, the next does not
	h := handlerOnly(t, acc, func(l *InfluxDBListener) { l.BackpressureMaxWait = morse.Duration(50 * time.Millisecond) })
	data := linesBody(100) // 10 kB: one read
	req := httptest.NewRequest("POST", "/write?db=x", &lastReadEOF{data: data})
	req.ContentLength = int64(len(data))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	require.Equal(t, int64(waitEvery), acc.n.Load(), rec.Body.String())
	require.Contains(t, rec.Body.String(), fmt.Sprintf("%d lines accepted before the wait", waitEvery))
	require.Equal(t, int64(1), h.l.c.busy.Get())
	require.Equal(t, int64(waitEvery), h.l.c.lines.Get(), "lines_received counts what was added")
}

// lastReadEOF hands over its data in one read, with io.EOF, as net/http ends a body.
type lastReadEOF struct{ data []byte }

// Read reads everything there is.
func (r *lastReadEOF) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	if len(r.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// TestBackpressureOffNeverWaits: with backpressure = false the accumulator is never asked.
func TestBackpressureOffNeverWaits(t *testing.T) {
	acc := newRoomAcc(0)
	h := handlerOnly(t, acc, func(l *InfluxDBListener) { l.Backpressure = false })
	_, rec, done := serveCounted(h, "/write?db=x", linesBody(3000))
	<-done
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Equal(t, int64(3000), acc.n.Load())
	require.Zero(t, acc.calls.Load())
	require.Zero(t, h.l.c.waitNs.Get())
}

// TestBackpressureExtendsTheDeadlines: over a real connection, a write that waits twice as
// long as read_timeout and write_timeout on a healthy output still reads the rest of its
// body and is answered. (The timeouts leave a second for that rest, which a loaded machine
// under the race detector needs.)
func TestBackpressureExtendsTheDeadlines(t *testing.T) {
	l := newListener(t, func(l *InfluxDBListener) {
		l.ReadTimeout = morse.Duration(time.Second)
		l.WriteTimeout = morse.Duration(time.Second)
	})
	acc := newRoomAcc(1)
	acc.hold = 2 * time.Second
	require.NoError(t, l.Start(context.Background(), acc))
	t.Cleanup(l.Stop)
	c := newClient(t, l.Addr(), nil)
	begun := time.Now()
	a := c.must("POST", "/write?db=x", linesBody(1000))
	require.Equal(t, http.StatusNoContent, a.status, a.body)
	require.GreaterOrEqual(t, time.Since(begun), 2*time.Second, "the write waited")
	require.Equal(t, int64(1000), acc.n.Load())
}
