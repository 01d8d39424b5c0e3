package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestReloadSharesTheDeadLetterFile: a reload that replaces an output keeping its
// dead_letter_file hands the open file on, so that the old instance, still draining, and the
// new one append through one DeadLetterFile, which rotates and counts alone. The old one's
// shutdown drops land in it, and the file is closed once neither holds it.
func TestReloadSharesTheDeadLetterFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "dead.lp")
		ts := &testSinks{down: map[string]bool{"old": true}}
		reg := ts.registry(t)
		text := func(sink, file string) string {
			return agentBase + "[[inputs.seq]]\n[[outputs.sink]]\n  sink = \"" + sink + "\"\n  dead_letter_file = \"" + file + "\"\n"
		}
		a, err := NewAgent(loadTestConfig(t, reg, text("old", path)), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(3500 * time.Millisecond) // the old sink is down: it holds what it has
		old := a.state.Load().outputs[0]
		oldDL, oldWriter := old.deadLetter, old.w
		require.NotNil(t, oldDL)

		require.NoError(t, a.Reload(context.Background(), loadTestConfig(t, reg, text("new", filepath.Join(dir, ".", "dead.lp")))))
		cur := a.state.Load().outputs[0]
		require.NotSame(t, oldWriter, cur.w, "the output was replaced")
		require.Same(t, oldDL, cur.deadLetter, "one DeadLetterFile for both instances")

		time.Sleep(10 * time.Second) // the old instance gives up after shutdown_timeout
		synctest.Wait()
		left := oldWriter.Stats().DroppedByReason["shutdown"]
		require.Positive(t, left)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), "reason=shutdown metrics="+strconv.FormatInt(left, 10))
		res, err := cur.deadLetter.Write(batch.DropEvent{Output: "x", Reason: "r", Count: 1, Metrics: []morse.Metric{testutil.SeqMetric(0)}})
		require.NoError(t, err, "the new instance still holds the file")
		require.Equal(t, 1, res.Kept)

		require.NoError(t, stop())
		_, err = oldDL.Write(batch.DropEvent{Output: "x", Reason: "r", Count: 1, Metrics: []morse.Metric{testutil.SeqMetric(0)}})
		require.Error(t, err, "closed once no output holds it")
		b, err = os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, 2, strings.Count("\n"+string(b), "\n# "), "two groups: the old instance's shutdown drops and ours")
	})
}
