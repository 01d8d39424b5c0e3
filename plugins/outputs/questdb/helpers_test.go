package questdb

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/stretchr/testify/require"
)

// protocols are the two ways to QuestDB that every real-server test covers.
var protocols = []string{"http", "tcp"}

// waitRows bounds how long a test waits for QuestDB to apply what it was sent.
const waitRows = 30 * time.Second

// newOutput returns a connected output writing to q over protocol, closed at the end.
func newOutput(t testing.TB, q *testserver.QuestDB, protocol string, set ...func(*QuestDB)) *QuestDB {
	t.Helper()
	o := New()
	o.Protocol = protocol
	o.Addr = q.HTTPAddr()
	if protocol == "tcp" {
		o.Addr = q.ILPAddr()
		o.TCPConfirmDelay = morse.Duration(testDelay) // the servers run with tcpServerProps
	}
	for _, f := range set {
		f(o)
	}
	require.NoError(t, o.Init())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, o.Connect(ctx))
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// write writes a batch, as the agent would, with a bounded time.
func write(t testing.TB, o *QuestDB, batch []morse.Metric) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return o.Write(ctx, batch)
}

// flush makes sure a TCP output's last batch is confirmed: QuestDB only commits what it has
// read, and the confirmation is what a test waits for before it counts rows. It closes o.
func flush(t testing.TB, o *QuestDB) {
	t.Helper()
	require.NoError(t, o.Close())
}

// confirmed waits until a TCP output has confirmed every batch it wrote, so that it has
// learned the columns those batches made; over HTTP it does nothing.
func confirmed(t testing.TB, o *QuestDB) {
	t.Helper()
	if o.tcp == nil {
		return
	}
	o.tcp.mu.Lock()
	defer o.tcp.mu.Unlock()
	ctx := context.Background()
	require.NoError(t, o.tcp.drain(ctx, time.Now().Add(waitRows)))
	require.Empty(t, o.tcp.window)
}

// rows builds n metrics of table, each with a unique id and value v = id.
func rows(table string, from, n int, base time.Time) []morse.Metric {
	out := make([]morse.Metric, n)
	for i := range n {
		id := from + i
		out[i] = morse.NewMetric(table,
			[]morse.Tag{{Key: "host", Value: fmt.Sprintf("h%d", id%7)}},
			[]morse.Field{{Key: "id", Value: morse.Int(int64(id))}, {Key: "v", Value: morse.Int(int64(id))}},
			base.Add(time.Duration(id)*time.Microsecond))
	}
	return out
}

// requireDropped checks that err is Write's report of exactly the metrics at the given batch
// indexes dropped under reason, out of a batch of n.
func requireDropped(t testing.TB, err error, n int, reason string, idx ...int) LineErrors {
	t.Helper()
	require.Error(t, err)
	var le LineErrors
	require.True(t, errors.As(err, &le), "no LineErrors in %v", err)
	require.ElementsMatch(t, idx, le.Indexes(), "%v", err)
	for _, e := range le {
		require.Equal(t, reason, e.Reason, "%v", e)
	}
	require.Equal(t, morse.OutcomePartial, morse.Classify(err), "exactly the dropped positions, even when all are")
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, n-len(idx), pw.Written)
	require.Equal(t, len(idx), pw.Dropped)
	require.Equal(t, reason, pw.Reason)
	require.ElementsMatch(t, idx, pw.Indices, "the positions reach the batch writer")
	var pe *morse.PermanentError
	require.ErrorAs(t, err, &pe, "found as permanent too")
	return le
}

// now is a fixed time in the past, so that rows are stored whatever the retention.
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTCPKey makes a key for QuestDB's ILP/TCP login: the private scalar, and the public
// point's coordinates, each in base64url as QuestDB's auth file and clients take them.
func newTCPKey(t testing.TB) (d, x, y string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	priv, err := key.Bytes()
	require.NoError(t, err)
	pub, err := key.PublicKey.Bytes() // 0x04, X, Y
	require.NoError(t, err)
	enc := base64.RawURLEncoding.EncodeToString
	return enc(priv), enc(pub[1:33]), enc(pub[33:])
}
