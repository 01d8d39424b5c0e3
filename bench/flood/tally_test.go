package flood

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// outputLines is what outputs.file writes for a few gathers of the flood: counters of
// several series, the aggregates of other kinds (which carry count fields that must not be
// summed), and the agent's own counters.
const outputLines = "bench_m01,host=host-00001,metric_type=counter value=3i 1000\n" +
	"bench_m02,host=host-00002,metric_type=counter value=5i 1000\n" +
	"bench_t,metric_type=timing count=7i,mean=1.5 1000\n" +
	"bench_g,metric_type=gauge value=11 1000\n" +
	"internal_statsd udp_packets_received=9i,udp_packets_dropped=1i,parse_errors=0i 1000\n" +
	"internal_write,output=file metrics_dropped=0i 1000\n" +
	"bench_m01,host=host-00001,metric_type=counter value=2i 2000\n" +
	"internal_statsd udp_packets_received=12i,udp_packets_dropped=4i,parse_errors=0i 2000\n"

func TestTallySumsCountersAcrossPartialWrites(t *testing.T) {
	whole := newTally("", "")
	whole.feed([]byte(outputLines))
	require.Equal(t, int64(10), whole.Captured, "3+5+2: the counters, not the timing's count nor the gauge")
	require.Equal(t, int64(8), whole.Metrics)
	require.Zero(t, whole.Refused)
	require.Equal(t, int64(4), whole.Internal["internal_statsd udp_packets_dropped"], "the last value")
	require.Equal(t, int64(12), whole.Internal["internal_statsd udp_packets_received"])
	require.Contains(t, whole.Internal, "internal_write metrics_dropped")

	// The agent writes as it goes, so a read can end inside a line: split the same bytes
	// at every offset and the counts must not change.
	for cut := range len(outputLines) {
		split := newTally("", "")
		split.feed([]byte(outputLines[:cut]))
		split.feed([]byte(outputLines[cut:]))
		require.Equal(t, whole.Captured, split.Captured, "cut at %d", cut)
		require.Equal(t, whole.Metrics, split.Metrics, "cut at %d", cut)
		require.Zero(t, split.Refused, "cut at %d", cut)
	}
}

func TestTallyFollowsAGrowingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	ty := newTally(path, "")
	require.NoError(t, ty.update(), "a file the agent has not created yet is empty")
	require.Zero(t, ty.Captured)

	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	half := len(outputLines) / 2
	_, err = f.WriteString(outputLines[:half])
	require.NoError(t, err)
	require.NoError(t, ty.update())
	_, err = f.WriteString(outputLines[half:])
	require.NoError(t, err)
	require.NoError(t, ty.update())
	require.NoError(t, ty.update(), "nothing new: nothing counted twice")
	require.Equal(t, int64(10), ty.Captured)
	require.Equal(t, int64(len(outputLines)), ty.off)
}

func TestTallyCountsLinesThatDoNotParse(t *testing.T) {
	ty := newTally("", "")
	ty.feed([]byte("bench_m01,metric_type=counter value=2i 1\nnot line protocol\n"))
	require.Equal(t, int64(2), ty.Captured)
	require.Equal(t, int64(1), ty.Refused)
}

func TestTallyCountsSyslogMessages(t *testing.T) {
	ty := newTally("", "syslog")
	ty.feed([]byte("syslog,appname=app-1,facility=kern,hostname=h,severity=err message=\"a\",version=1i 1\n" +
		"syslog,appname=app-2,facility=kern,hostname=h,severity=err message=\"b\",version=1i 1\n" +
		"bench_m01,metric_type=counter value=7i 1\n" +
		"internal_syslog messages_received=2i,malformed_messages=0i 1\n"))
	require.Equal(t, int64(2), ty.Captured, "one metric a message; nothing else counts")
	require.Equal(t, int64(2), ty.Internal["internal_syslog messages_received"])
}
