package batch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// TestConnectAfterWaitsForThePreviousWriter: a writer given another writer's Closed channel
// buffers without touching the output until that writer has closed it, then writes
// everything; once closed, its own Closed channel lets the next one go.
func TestConnectAfterWaitsForThePreviousWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{}
		prev, err := NewWriter(out, Options{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		w, err := NewWriter(out, Options{BatchSize: 1, FlushInterval: time.Second, ConnectAfter: prev.Closed(),
			Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		for _, m := range testutil.SeqMetrics(0, 3) {
			require.NoError(t, w.Write(m))
		}
		time.Sleep(5 * time.Second) // fake time: five flush intervals
		calls, _ := out.Snapshot()
		require.Empty(t, calls, "no Write before the previous writer closed the output")

		require.NoError(t, prev.Close(context.Background()))
		synctest.Wait()
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, 3), testutil.Seqs(written))
		require.NoError(t, w.Close(context.Background()))
		<-w.Closed()
	})
}

// TestClosedBeforeItsTurnLeavesTheOutputAlone: a writer closed while the previous one still
// uses the output never closes it, and counts what it held as unsent.
func TestClosedBeforeItsTurnLeavesTheOutputAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{}
		w, err := NewWriter(out, Options{ConnectAfter: make(chan struct{}), Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var unsent *UnsentError
		require.ErrorAs(t, w.Close(ctx), &unsent)
		require.Equal(t, 1, unsent.Left)
		require.False(t, out.Closed(), "the previous writer still uses it")
		require.EqualValues(t, 1, w.Stats().Dropped)
	})
}
