package questdb

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/stretchr/testify/require"
)

// writeRetrying writes a batch as the agent does: a retryable error means the same batch
// again, after a pause, until the deadline.
func writeRetrying(t *testing.T, o *QuestDB, batch []morse.Metric, deadline time.Time) (retries int) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := write(t, o, batch)
		if err == nil {
			return retries
		}
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
		require.True(t, time.Now().Before(deadline), "still failing: %v", err)
		retries++
		<-tick.C
	}
}

// testRestartLosesNothing restarts QuestDB while batches stream to it over TCP, first
// back to back, then further apart than tcp_confirm_delay: every row arrives; what arrives
// twice is at most what was written in the last tcp_confirm_delay before the restart, which
// for the paced stream is at most the last batch.
func testRestartLosesNothing(t *testing.T, q *testserver.QuestDB) {
	// QuestDB loses rows it has not committed when it is restarted, and commits rows read
	// over TCP within about 300 to 600 ms when idle: the delay must cover that.
	const delay = time.Second
	tests := []struct {
		name          string
		batches, size int
		pace          time.Duration // between batches; 0: back to back
		restartAfter  int
		maxDuplicates int
	}{
		// Back to back, the window holds what the last delay wrote: the test does not know
		// how much that is, only that nothing may be lost.
		{name: "flood", batches: 40, size: 500, restartAfter: 10, maxDuplicates: 40 * 500},
		{name: "paced", batches: 8, size: 1000, pace: delay + 100*time.Millisecond, restartAfter: 3, maxDuplicates: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := "restart_" + tt.name
			o := newOutput(t, q, "tcp", func(o *QuestDB) { o.TCPConfirmDelay = morse.Duration(delay) })
			tcp := o.tcp
			var wg sync.WaitGroup
			defer wg.Wait()
			deadline := time.Now().Add(60 * time.Second)
			retries := 0
			pace := time.NewTicker(max(tt.pace, time.Millisecond))
			defer pace.Stop()
			for b := range tt.batches {
				retries += writeRetrying(t, o, rows(table, b*tt.size, tt.size, now), deadline)
				if b == tt.restartAfter {
					// Mid-stream: the restart runs while the next batches are written.
					wg.Go(func() {
						start := time.Now()
						q.Restart(t)
						t.Logf("restarted after batch %d in %s", b, time.Since(start))
					})
				}
				if tt.pace > 0 {
					<-pace.C
				}
			}
			wg.Wait()
			flush(t, o)
			t.Logf("%d batches of %d, %d retried writes, %d connections, %d batches sent again",
				tt.batches, tt.size, retries, tcp.reconnects.Load(), tcp.resends.Load())
			require.Zero(t, tcp.givenUp.Load())
			require.Positive(t, tcp.resends.Load(), "the restart must have cost a connection")

			want := tt.batches * tt.size
			q.WaitApplied(t, waitRows)
			var res testserver.QuestResult
			var qerr error
			require.Eventually(t, func() bool {
				res, qerr = q.Query(t.Context(), "SELECT count_distinct(id), count() FROM "+table)
				return qerr == nil && len(res.Dataset) == 1 && res.Dataset[0][0] == json.Number(itoa(want))
			}, waitRows, 100*time.Millisecond, "distinct ids, rows: %v, %v", res.Dataset, qerr)
			stored, err := res.Dataset[0][1].(json.Number).Int64()
			require.NoError(t, err)
			t.Logf("rows stored: %d for %d sent (%d twice)", stored, want, stored-int64(want))
			require.LessOrEqual(t, stored-int64(want), int64(tt.maxDuplicates))
		})
	}
}

// testPoisonBatch: a line whose type conflicts with a column this output did not create
// makes QuestDB close the connection every time the batch is sent. The output gives that
// batch up after a bounded number of tries, says so, and the batches after it arrive whole.
func testPoisonBatch(t *testing.T, q *testserver.QuestDB) {
	q.MustQuery(t, "CREATE TABLE poison (id LONG, v LONG, host SYMBOL, timestamp TIMESTAMP) TIMESTAMP(timestamp) PARTITION BY DAY WAL")
	var l logs
	o := newOutput(t, q, "tcp", func(o *QuestDB) { o.SetLogger(l.logger()) })
	tcp := o.tcp
	bad := rows("poison", 0, 10, now)
	bad[5] = bad[5].WithField("v", morse.String("x"))
	require.NoError(t, write(t, o, bad), "over TCP the server says nothing at once")
	deadline := time.Now().Add(60 * time.Second)
	writeRetrying(t, o, rows("poison", 100, 10, now), deadline)
	writeRetrying(t, o, rows("poison", 200, 10, now), deadline)
	flush(t, o)
	require.Equal(t, int64(1), tcp.givenUp.Load())
	require.Contains(t, l.String(), "holds a line that QuestDB refuses")
	q.WaitApplied(t, waitRows)
	require.Eventually(t, func() bool {
		res, err := q.Query(t.Context(), "SELECT count() FROM poison WHERE id >= 100")
		return err == nil && len(res.Dataset) == 1 && res.Dataset[0][0] == json.Number("20")
	}, waitRows, 100*time.Millisecond)
	res := q.MustQuery(t, "SELECT count() FROM poison WHERE id >= 100")
	require.Equal(t, json.Number("20"), res.Dataset[0][0], "the batches after the poisoned one are whole")
	res = q.MustQuery(t, "SELECT count() FROM poison WHERE id >= 5 AND id < 10")
	require.Equal(t, json.Number("0"), res.Dataset[0][0], "from the bad line on, the poisoned batch is lost")
}

// TestTCPAuth logs in with QuestDB's ILP/TCP challenge-response, and a wrong key is refused
// with a retryable error.
func TestTCPAuth(t *testing.T) {
	key, x, y := newTCPKey(t)
	q := testserver.StartQuestDB(t, testserver.QuestDBOptions{TCPAuthDB: "morse ec-p-256-sha256 " + x + " " + y + "\n"})
	tests := []struct {
		name, conf string
		ok         bool
	}{
		{"right key", "tcp::addr=" + q.ILPAddr() + ";username=morse;token=" + key + ";token_x=" + x + ";token_y=" + y + ";", true},
		{"unknown key id", "tcp::addr=" + q.ILPAddr() + ";username=other;token=" + key + ";", false},
	}
	other, _, _ := newTCPKey(t)
	tests = append(tests, struct {
		name, conf string
		ok         bool
	}{"wrong key", "tcp::addr=" + q.ILPAddr() + ";username=morse;token=" + other + ";", false})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New()
			o.Conf = morse.Secret(tt.conf)
			require.NoError(t, o.Init())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, o.Connect(ctx), "a server that refuses is not a config error")
			err := write(t, o, rows("auth", i*10, 10, now))
			if !tt.ok {
				require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
				require.True(t, strings.Contains(err.Error(), "refused the key") || strings.Contains(err.Error(), "challenge"), "%v", err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, o.Close())
			q.WaitCount(t, "auth", 10, waitRows)
		})
	}
}
