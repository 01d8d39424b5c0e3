package questdb

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
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

// testDelay is tcp_confirm_delay in the tests: it covers QuestDB's commit of what it read
// under tcpServerProps, and the time it takes to close a connection after a bad line.
const testDelay = 500 * time.Millisecond

// tcpServerProps make QuestDB commit what it reads over TCP within about 50 to 100 ms, as
// the README recommends for a short tcp_confirm_delay: the commit interval is
// cairo.o3.min.lag (1 s) times the fraction, and idle connections are looked at every
// maintenance interval.
var tcpServerProps = map[string]string{
	"line.tcp.commit.interval.fraction": "0.05",
	"line.tcp.maintenance.job.interval": "50",
}

// streamResult is what a stream over TCP stored: rows, distinct ids, and the sender's counts.
type streamResult struct {
	stored, distinct                int64
	retries, resends, givenUp, dial int64
}

// stream writes batches of size rows of table back to back over TCP, as the agent does,
// calling during(b) after batch b is written; then it closes the output and counts.
func stream(t *testing.T, q *testserver.QuestDB, o *QuestDB, table string, batches, size int,
	gen func(b int) []morse.Metric, during func(b int)) streamResult {
	t.Helper()
	tcp := o.tcp
	deadline := time.Now().Add(90 * time.Second)
	var r streamResult
	for b := range batches {
		r.retries += int64(writeRetrying(t, o, gen(b), deadline))
		during(b)
	}
	flush(t, o)
	r.resends, r.givenUp, r.dial = tcp.resends.Load(), tcp.givenUp.Load(), tcp.reconnects.Load()
	q.WaitApplied(t, waitRows)
	res := q.MustQuery(t, "SELECT count_distinct(id), count() FROM "+table)
	var err error
	r.distinct, err = res.Dataset[0][0].(json.Number).Int64()
	require.NoError(t, err)
	r.stored, err = res.Dataset[0][1].(json.Number).Int64()
	require.NoError(t, err)
	t.Logf("%d batches of %d: %d rows stored, %d distinct ids; %d retried writes, %d connections, %d batches sent again, %d given up",
		batches, size, r.stored, r.distinct, r.retries, r.dial, r.resends, r.givenUp)
	return r
}

// testRestartLosesNothing restarts QuestDB while batches stream to it back to back over
// TCP: every row arrives, and what arrives twice is at most the batches kept unconfirmed,
// one batch by default.
func testRestartLosesNothing(t *testing.T, q *testserver.QuestDB) {
	tests := []struct {
		name          string
		unconfirmed   int
		batches, size int
		restartAfter  int
	}{
		{name: "one batch unconfirmed", unconfirmed: 1, batches: 16, size: 500, restartAfter: 5},
		{name: "four batches unconfirmed", unconfirmed: 4, batches: 24, size: 500, restartAfter: 10},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := "restart_" + strconv.Itoa(i)
			o := newOutput(t, q, "tcp", func(o *QuestDB) {
				o.TCPConfirmDelay = morse.Duration(testDelay)
				o.TCPUnconfirmedBatches = tt.unconfirmed
			})
			var wg sync.WaitGroup
			defer wg.Wait()
			r := stream(t, q, o, table, tt.batches, tt.size,
				func(b int) []morse.Metric { return rows(table, b*tt.size, tt.size, now) },
				func(b int) {
					if b == tt.restartAfter {
						// Mid-stream: the restart runs while the next batches are written.
						wg.Go(func() { q.Restart(t) })
					}
					if b == tt.batches-1 {
						wg.Wait() // the last batches go to the restarted server
					}
				})
			require.Zero(t, r.givenUp)
			require.Positive(t, r.resends, "the restart must have cost a connection")
			require.Equal(t, int64(tt.batches*tt.size), r.distinct, "nothing is lost")
			require.LessOrEqual(t, r.stored-r.distinct, int64(tt.unconfirmed*tt.size), "at most the unconfirmed batches twice")
		})
	}
}

// testBadLineMidFlood sends, in a flood of batches, one whose line QuestDB refuses (a type
// conflict with a column that the table was created with and this output never wrote, so
// its checks cannot know): QuestDB closes the connection. The
// batches before and after it arrive whole and once; that batch is sent twice and given
// up, so its lines before the bad one are stored at most twice, and those from it on not
// at all: at most one batch is duplicated.
func testBadLineMidFlood(t *testing.T, q *testserver.QuestDB) {
	const table, batches, size, poisoned, badLine = "midflood", 12, 500, 5, 250
	q.MustQuery(t, "CREATE TABLE "+table+" (id LONG, v LONG, w LONG, host SYMBOL, timestamp TIMESTAMP) TIMESTAMP(timestamp) PARTITION BY DAY WAL")
	o := newOutput(t, q, "tcp")
	r := stream(t, q, o, table, batches, size, func(b int) []morse.Metric {
		batch := rows(table, b*size, size, now)
		if b == poisoned {
			batch[badLine] = batch[badLine].WithField("w", morse.String("x"))
		}
		return batch
	}, func(int) {})
	require.Equal(t, int64(1), r.givenUp)
	require.LessOrEqual(t, r.stored-r.distinct, int64(size), "at most one batch twice")
	lo, hi := strconv.Itoa(poisoned*size), strconv.Itoa((poisoned+1)*size)
	res := q.MustQuery(t, "SELECT count_distinct(id), count() FROM "+table+" WHERE id < "+lo+" OR id >= "+hi)
	want := json.Number(strconv.Itoa((batches - 1) * size))
	require.Equal(t, []any{want, want}, res.Dataset[0], "the other batches arrive whole, once")
	res = q.MustQuery(t, "SELECT count() FROM "+table+" WHERE id >= "+strconv.Itoa(poisoned*size+badLine)+" AND id < "+hi)
	require.Equal(t, json.Number("0"), res.Dataset[0][0], "from the bad line on, the batch is lost")
}

// testPoisonBatch: a line whose type conflicts with a column this output did not create
// makes QuestDB close the connection every time the batch is sent. The output gives that
// batch up after a bounded number of tries, says so, and the batches after it arrive whole.
func testPoisonBatch(t *testing.T, q *testserver.QuestDB) {
	q.MustQuery(t, "CREATE TABLE poison (id LONG, v LONG, host SYMBOL, timestamp TIMESTAMP) TIMESTAMP(timestamp) PARTITION BY DAY WAL")
	var l testutil.Logs
	o := newOutput(t, q, "tcp", func(o *QuestDB) { o.SetLogger(l.Logger()) })
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

// testWindowOwnsBatches: the window keeps the very buffers a batch was serialized into, and
// hands those of confirmed batches back to be serialized into again. Each kept batch must
// still hold its own lines after the writes that followed it, and be stored whole.
func testWindowOwnsBatches(t *testing.T, q *testserver.QuestDB) {
	o := newOutput(t, q, "tcp", func(o *QuestDB) { o.TCPUnconfirmedBatches = 3 })
	tables := []string{"window_a", "window_b", "window_c", "window_d", "window_e"}
	for round, table := range tables {
		require.NoError(t, write(t, o, rows(table, 0, 20+round, now)))
		for _, data := range kept(o) {
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			first := lines[0][:strings.IndexByte(lines[0], ',')]
			require.Len(t, lines, 20+slices.Index(tables, first), "a kept batch is whole")
			for _, l := range lines {
				require.True(t, strings.HasPrefix(l, first+","), "a kept batch holds its own lines only: %q", l)
			}
		}
	}
	flush(t, o)
	for round, table := range tables {
		q.WaitCount(t, table, int64(20+round), waitRows)
	}
}

// kept copies what a TCP output's window holds, oldest first.
func kept(o *QuestDB) [][]byte {
	o.tcp.mu.Lock()
	defer o.tcp.mu.Unlock()
	var out [][]byte
	for _, b := range o.tcp.window {
		out = append(out, slices.Clone(b.data))
	}
	return out
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
