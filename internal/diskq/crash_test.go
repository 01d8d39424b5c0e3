package diskq

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const crashChildEnv = "DISKQ_CRASH_CHILD"

// TestKillNineLosesNothingAcknowledged kills a process that appends and acknowledges as
// fast as it can with SIGKILL at random moments, ten times. After each kill, every record
// whose Append had returned is there, in order, with nothing after the last acknowledged
// Ack missing from the head: the page cache keeps what write(2) returned for.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild(t)
		return
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	next, head := uint64(0), uint64(0)
	for cycle := range 10 {
		appended, acked := runUntilKilled(t, dir, next, time.Duration(5+rng.IntN(40))*time.Millisecond)
		q, rec, err := Open(dir, testOptions(nil))
		require.NoError(t, err, "cycle %d", cycle)
		var got []uint64
		for {
			sp, err := q.Read(1000, func(r Record) { got = append(got, itemsOf(r)...) })
			require.NoError(t, err)
			if sp.Items() == 0 {
				break
			}
		}
		require.NoError(t, q.Close())
		require.NotEmpty(t, got, "cycle %d", cycle)
		require.LessOrEqual(t, max(acked, head), got[0], "cycle %d: nothing acknowledged comes back", cycle)
		// The kill may land after an Ack returned and before the child said so: one step.
		require.LessOrEqual(t, got[0], max(acked, head)+120, "cycle %d: nothing unacknowledged is skipped", cycle)
		require.Equal(t, seq(got[0], got[0]+uint64(len(got))), got, "cycle %d: contiguous", cycle)
		end := got[len(got)-1] + 1
		require.GreaterOrEqual(t, end, appended, "cycle %d: every returned Append is there (torn %d B)", cycle, rec.TornBytes)
		next, head = end, got[0]
	}
}

// runUntilKilled starts the child, lets it run for d, kills it with SIGKILL and returns the
// end of the last record it reported appended and the last item it reported acknowledged.
func runUntilKilled(t *testing.T, dir string, next uint64, d time.Duration) (appended, acked uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillNineLosesNothingAcknowledged$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+","+strconv.FormatUint(next, 10))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	kill := time.After(d)
	deadline := time.After(30 * time.Second)
	appended, acked = next, 0
	ready := false
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				require.NoError(t, cmd.Wait())
				t.Fatal("the child ended by itself")
			}
			var n uint64
			if _, err := fmt.Sscanf(l, "appended %d", &n); err == nil {
				appended, ready = n, true
			} else if _, err := fmt.Sscanf(l, "acked %d", &n); err == nil {
				acked = n
			}
		case <-kill:
			if !ready {
				kill = time.After(time.Millisecond)
				continue
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			for l := range lines { // what it said before it died
				var n uint64
				if _, err := fmt.Sscanf(l, "appended %d", &n); err == nil {
					appended = n
				} else if _, err := fmt.Sscanf(l, "acked %d", &n); err == nil {
					acked = n
				}
			}
			_ = cmd.Wait()
			return appended, acked
		case <-deadline:
			t.Fatal("the child never got going")
		}
	}
}

// crashChild appends records of 50 numbered items, and reads and acknowledges 120 items
// after every third record, reporting each step once it returned, until it is killed.
func crashChild(t *testing.T) {
	dir, from, _ := strings.Cut(os.Getenv(crashChildEnv), ",")
	next, err := strconv.ParseUint(from, 10, 64)
	require.NoError(t, err)
	opts := testOptions(nil)
	opts.SegmentBytes = 8 << 10
	q, _, err := Open(dir, opts)
	require.NoError(t, err)
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		require.NoError(t, q.Append(50, 0, encodeItems(seq(next, next+50)...)))
		next += 50
		fmt.Fprintf(w, "appended %d\n", next)
		if i%3 == 2 {
			var last uint64
			sp, err := q.Read(120, func(r Record) { its := itemsOf(r); last = its[len(its)-1] })
			require.NoError(t, err)
			require.NoError(t, q.Ack(sp))
			fmt.Fprintf(w, "acked %d\n", last+1)
		}
		w.Flush()
	}
}
