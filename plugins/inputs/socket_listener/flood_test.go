package socketlistener

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// arriveWithin is how long a legitimate sender's line may take to arrive while the listener
// is flooded.
const arriveWithin = time.Second

// timedLine writes one line on conn and returns how long it took to arrive as metric n.
func timedLine(t *testing.T, conn net.Conn, acc *testutil.Accumulator, n int) time.Duration {
	t.Helper()
	begun := time.Now()
	_, err := fmt.Fprintf(conn, "legit,n=%d v=1\n", n)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, acc.Wait(ctx, n), "line %d arrives during the flood", n)
	return time.Since(begun)
}

// TestIdleConnectionsDoNotLockSendersOut opens 1,024, 5,000 and 10,000 TCP connections that
// send nothing, or half a line, to a listener with the default max_connections (1,024) and
// read_timeout (5m). A sender that connected before the flood and a sender that connects
// during it must both have their lines arrive within a second: connections without a
// complete line are closed to make room, the oldest first, and the earlier sender, which
// has sent lines, is not among them. Before that, the cap turned every new sender away for
// as long as the flood held its connections.
func TestIdleConnectionsDoNotLockSendersOut(t *testing.T) {
	// The flood's 10,000 sockets, and at most max_connections on the listener's side.
	testutil.RaiseNoFile(t, 10_000+1024+512)
	var worst time.Duration
	for _, tc := range []struct {
		idle   int
		prefix string
	}{
		{1024, ""}, {5000, ""}, {10_000, ""}, {10_000, "flood,half=line v="},
	} {
		name := fmt.Sprintf("%d idle, %d bytes of a line", tc.idle, len(tc.prefix))
		t.Run(name, func(t *testing.T) {
			s := newListener(t, "tcp://127.0.0.1:0")
			require.Equal(t, 1024, s.MaxConnections, "the default cap")
			acc, st := start(t, s)
			addr := s.Addr().String()
			early, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer early.Close()
			timedLine(t, early, acc, 1)

			testutil.Flood(t, addr, tc.idle, []byte(tc.prefix))
			require.Eventually(t, func() bool {
				return st.Counter("connections_opened").Get()+st.Counter("connections_refused").Get() >= int64(tc.idle+1)
			}, waitFor, time.Millisecond, "the listener has taken in every connection of the flood")

			var took []time.Duration
			took = append(took, timedLine(t, early, acc, 2))
			late, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer late.Close()
			begun := time.Now()
			timedLine(t, late, acc, 3)
			took = append(took, time.Since(begun), timedLine(t, late, acc, 4), timedLine(t, early, acc, 5))
			for _, d := range took {
				require.Less(t, d, arriveWithin)
			}
			worstHere := max(took[0], took[1], took[2], took[3])
			worst = max(worst, worstHere)
			require.Len(t, acc.MetricsNamed("legit"), 5, "only the senders' lines arrived")
			require.Zero(t, st.Counter("connections_refused").Get())
			t.Logf("%s: worst arrival %s (late sender from its dial: %s); evicted %d", name, worstHere, took[1],
				st.Counter("connections_evicted").Get())
		})
	}
	t.Logf("worst arrival during any flood: %s", worst)
}
