package batch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestRecoveredOutputLogsOneLine: after writes that failed and were retried, the first
// write that succeeds logs one line saying the output recovered, with how many attempts
// failed and for how long; later successes log nothing more.
func TestRecoveredOutputLogsOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
			if call < 3 {
				return morse.Retryable(errors.New("connection refused"), 5*time.Second)
			}
			return nil
		}}
		var logs testutil.Logs
		w, err := NewWriter(out, Options{FlushInterval: time.Second, Logger: logs.Logger()})
		require.NoError(t, err)
		defer func() { require.NoError(t, w.Close(context.Background())) }()
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		time.Sleep(30 * time.Second)
		require.NoError(t, w.Write(testutil.SeqMetric(1)))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		_, written := out.Snapshot()
		require.Equal(t, []int{0, 1}, testutil.Seqs(written))
		var recovered []string
		for _, r := range logs.All() {
			if strings.Contains(r, "recovered") {
				recovered = append(recovered, r)
			}
		}
		require.Equal(t, []string{"INFO write succeeded again: the output recovered output=output failed_attempts=3 failing_for=15s"}, recovered)
	})
}
