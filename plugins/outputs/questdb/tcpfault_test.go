package questdb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// The faults between the output and QuestDB over TCP, through a relay in front of the real
// server: a cut connection, a proxy whose server is down, TLS terminated in front of it,
// and writes cut short by their context or by Close.

// via sends a TCP output's connections through relay r.
func via(r *testserver.TCPRelay) func(*QuestDB) {
	return func(o *QuestDB) { o.Addr = r.Addr() }
}

// requireIDs waits for table to hold the ids 0 to n-1, each at least once, and nothing else.
func requireIDs(t *testing.T, q *testserver.QuestDB, table string, n int) (stored int64) {
	t.Helper()
	q.WaitApplied(t, waitRows)
	res := q.MustQuery(t, "SELECT count_distinct(id), count(), min(id), max(id) FROM "+table)
	row := res.Dataset[0]
	require.Equal(t, []any{json.Number(strconv.Itoa(n)), json.Number("0"), json.Number(strconv.Itoa(n - 1))},
		[]any{row[0], row[2], row[3]}, "ids 0 to %d, each stored", n-1)
	stored, err := row[1].(json.Number).Int64()
	require.NoError(t, err)
	return stored
}

// testRecoveryCutShort: after a cut, a write runs out of time while the first of two kept
// batches is sent again and waits for its confirmation. The next writes send the second
// before anything new, on the same connection, and nothing is lost. The write's time is
// half the confirmation delay: ample to dial and send, too short to see one confirmed.
func testRecoveryCutShort(t *testing.T, q *testserver.QuestDB) {
	const table, delay = "cut_short", 3 * time.Second
	r := testserver.StartTCPRelay(t, q.ILPAddr(), nil)
	o := newOutput(t, q, "tcp", via(r), func(o *QuestDB) {
		o.TCPUnconfirmedBatches = 2
		o.TCPConfirmDelay, o.Timeout = morse.Duration(delay), morse.Duration(4*delay)
	})
	tcp := o.tcp
	require.NoError(t, write(t, o, rows(table, 0, 10, now)))
	require.NoError(t, write(t, o, rows(table, 10, 10, now)))
	r.WaitRelayed(t, 1)
	r.Cut()

	ctx, cancel := context.WithTimeout(context.Background(), delay/2)
	err := o.Write(ctx, rows(table, 20, 10, now))
	cancel()
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	tcp.mu.Lock()
	cutShort := tcp.conn != nil && tcp.window[0].live && tcp.stale()
	tcp.mu.Unlock()
	require.True(t, cutShort, "the write stopped with the first batch sent again and the second not yet")

	deadline := time.Now().Add(waitRows)
	writeRetrying(t, o, rows(table, 20, 10, now), deadline)
	writeRetrying(t, o, rows(table, 30, 10, now), deadline)
	flush(t, o)
	stored := requireIDs(t, q, table, 40)
	require.LessOrEqual(t, stored, int64(40+2*10), "at most the two kept batches twice")
	require.Equal(t, int64(2), r.Accepted(), "one new connection sends every kept batch again")
	require.Equal(t, int64(2), tcp.resends.Load())
}

// testProxyWithServerDown: a proxy keeps accepting connections while the server behind it
// is down, and closes each at once. That is no batch's fault: the writes fail, to be
// retried, and the kept batch is sent once the server is back, not given up.
func testProxyWithServerDown(t *testing.T, q *testserver.QuestDB) {
	const table = "proxy_down"
	r := testserver.StartTCPRelay(t, q.ILPAddr(), nil)
	o := newOutput(t, q, "tcp", via(r))
	tcp := o.tcp
	require.NoError(t, write(t, o, rows(table, 0, 10, now)))
	r.WaitRelayed(t, 1)
	r.SetDown(true)
	r.Cut()
	for range 3 {
		err := write(t, o, rows(table, 10, 10, now))
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	}
	require.Zero(t, tcp.givenUp.Load())
	require.GreaterOrEqual(t, r.Accepted(), int64(4), "the output kept trying")

	r.SetDown(false)
	writeRetrying(t, o, rows(table, 10, 10, now), time.Now().Add(waitRows))
	flush(t, o)
	requireIDs(t, q, table, 20)
	require.Zero(t, tcp.givenUp.Load())
}

// testTLSTerminated: mutual TLS 1.3 terminated in front of QuestDB. Its server sends a
// session ticket once it has the client's certificate, so the ticket arrives after the
// client's handshake is over and waits, unread, in the socket, as OpenSSL's and Java's
// servers send theirs. It is TLS's own record, not a close: nothing is sent twice or given
// up.
func testTLSTerminated(t *testing.T, q *testserver.QuestDB) {
	const table = "tls_relay"
	certs := testutil.NewCerts(t)
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	require.NoError(t, err)
	cas := x509.NewCertPool()
	pem, err := os.ReadFile(certs.CA)
	require.NoError(t, err)
	require.True(t, cas.AppendCertsFromPEM(pem))
	r := testserver.StartTCPRelay(t, q.ILPAddr(), &tls.Config{
		Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: cas,
	})
	o := newOutput(t, q, "tcps", via(r), func(o *QuestDB) {
		o.CA, o.Cert, o.Key = certs.CA, certs.ClientCert, certs.ClientKey
		o.TCPConfirmDelay = morse.Duration(testDelay)
	})
	// Go's server sends tickets only to a client that could resume with them, so the sender
	// gets a session cache and a fresh connection.
	tcp := o.tcp
	cache := tls.NewLRUClientSessionCache(1)
	tcp.mu.Lock()
	tcp.tlsCfg.ClientSessionCache = cache
	tcp.disconnect()
	tcp.mu.Unlock()
	require.NoError(t, write(t, o, rows(table, 0, 10, now)))
	// The ticket has come: it waits in the socket for the next write to look at the
	// connection, or the first write's look already found it there and TLS took it.
	require.Eventually(t, func() bool {
		tcp.mu.Lock()
		defer tcp.mu.Unlock()
		readable, _, err := connState(tcp.tcp)
		_, taken := cache.Get("127.0.0.1")
		return err == nil && readable || taken
	}, 10*time.Second, 5*time.Millisecond, "the server sent no session ticket")
	for b := 1; b < 3; b++ {
		require.NoError(t, write(t, o, rows(table, b*10, 10, now)))
	}
	flush(t, o)
	require.Equal(t, int64(30), requireIDs(t, q, table, 30), "each row once")
	require.Zero(t, tcp.resends.Load())
	require.Zero(t, tcp.givenUp.Load())
	require.Equal(t, int64(2), r.Accepted(), "the connection of Connect, then one for the writes")
}

// testCancelStopsTheWait: a write waiting for the batch before it to be confirmed returns
// as soon as its context is cancelled, not when tcp_confirm_delay is over.
func testCancelStopsTheWait(t *testing.T, q *testserver.QuestDB) {
	const table, delay = "cancel_wait", 3 * time.Second
	o := newOutput(t, q, "tcp", func(o *QuestDB) {
		o.TCPConfirmDelay = morse.Duration(delay)
		o.Timeout = morse.Duration(4 * delay)
	})
	require.NoError(t, write(t, o, rows(table, 0, 10, now)))
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(50*time.Millisecond, cancel)
	defer stop.Stop()
	start := time.Now()
	err := o.Write(ctx, rows(table, 10, 10, now))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.Less(t, time.Since(start), delay, "the wait ends with the context")
	require.NoError(t, write(t, o, rows(table, 10, 10, now)))
	flush(t, o)
	require.Equal(t, int64(20), requireIDs(t, q, table, 20))
}

// testCloseDuringWrite: Close while a write waits for the window. Both end, and what the
// write was told is true: a batch it reported written is stored, one it did not is not
// sent, and no connection is opened after Close.
func testCloseDuringWrite(t *testing.T, q *testserver.QuestDB) {
	const table = "close_during"
	r := testserver.StartTCPRelay(t, q.ILPAddr(), nil)
	o := newOutput(t, q, "tcp", via(r))
	require.NoError(t, write(t, o, rows(table, 0, 10, now)))
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = write(t, o, rows(table, 10, 10, now)) })
	require.NoError(t, o.Close())
	wg.Wait()
	want := 20
	if err != nil {
		require.ErrorIs(t, err, errClosed)
		want = 10
	}
	require.Equal(t, int64(want), requireIDs(t, q, table, want))
	require.Equal(t, int64(1), r.Accepted(), "no connection after Close")
}
