package e2e

import (
	"github.com/morse-agent/morse/internal/testutil"

	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStatusOfThisProcess(t *testing.T) {
	hwm, err := statusKiB(os.Getpid(), "VmHWM")
	require.NoError(t, err)
	require.Positive(t, hwm)
}

func TestParseCPULine(t *testing.T) {
	busy, err := parseCPULine("cpu  100 5 50 1000 20 3 2 0 0 0")
	require.NoError(t, err)
	require.Equal(t, 160*testutil.ClockTick, busy, "idle and iowait are not busy")
	_, err = parseCPULine("intr 1 2 3")
	require.Error(t, err)
}

func TestConfigRendersTheDefaultsTheTargetsNeed(t *testing.T) {
	conf := agentConfig{Input: "socket_listener", Listen: "tcp://127.0.0.1:9", SinkAddr: "127.0.0.1:8", InternalFile: "/tmp/x"}.render()
	for _, want := range []string{
		`flush_interval = "1s"`, "metric_batch_size = 1000", "metric_buffer_limit = 10000", "omit_hostname = true",
		"[[inputs.socket_listener]]\n  service_address = \"tcp://127.0.0.1:9\"",
		`urls = ["http://127.0.0.1:8"]`, "skip_database_creation = true", `namedrop = ["internal*"]`,
		"[[inputs.internal]]", `files = ["/tmp/x"]`,
	} {
		require.Contains(t, conf, want)
	}
	require.NotContains(t, agentConfig{Input: "x"}.render(), "inputs.internal")
	require.NotContains(t, conf, "read_buffer_size", "the OS default unless a scenario asks")
	udp := agentConfig{Input: "socket_listener", Listen: "udp://127.0.0.1:9", ReadBufferSize: "4MiB"}.render()
	require.Contains(t, udp, "service_address = \"udp://127.0.0.1:9\"\n  read_buffer_size = \"4MiB\"\n")
	require.NotContains(t, conf, "buffer_strategy", "the memory buffer unless a scenario asks")
	disk := agentConfig{Input: "influxdb_listener", Listen: "127.0.0.1:9", SinkAddr: "127.0.0.1:8", BufferDir: "/tmp/b"}.render()
	require.Contains(t, disk, "buffer_strategy = \"disk\"\n  buffer_directory = \"/tmp/b\"\n")
}

func TestPacedFollowUp(t *testing.T) {
	sc := scenario{Name: "tcp", Transport: "tcp", Input: "socket_listener"}
	next, ok := pacedFollowUp(sc, result{DeliveryPct: 40, DeliveredPerSec: 123456})
	require.True(t, ok)
	require.Equal(t, "tcp-paced", next.Name)
	require.Equal(t, 98000.0, next.Rate)
	_, ok = pacedFollowUp(next, result{DeliveryPct: 40})
	require.False(t, ok, "a paced run is not paced again")
	_, ok = pacedFollowUp(sc, result{DeliveryPct: 99.5})
	require.False(t, ok)
	udp := scenario{Name: "udp", Transport: "udp", Input: "socket_listener"}
	_, ok = pacedFollowUp(udp, result{DeliveryPct: 100, UDPCapturePct: 97})
	require.True(t, ok, "UDP that lost datagrams is rerun")
	_, ok = pacedFollowUp(scenario{Name: "sink-direct"}, result{DeliveryPct: 1})
	require.False(t, ok)
}

func TestEvaluate(t *testing.T) {
	ts := evaluate([]result{
		{Scenario: scenario{Name: "http", Transport: "http", Input: "influxdb_listener"}, CPUMicrosLine: 2.0, DeliveryPct: 98},
		{Scenario: scenario{Name: "tcp-paced", Transport: "tcp", Input: "socket_listener", Rate: 1000}, CPUMicrosLine: 3},
		{Scenario: scenario{Name: "udp", Transport: "udp", Input: "socket_listener"}, UDPCapturePct: 100},
		{Scenario: scenario{Name: "sink-direct", Transport: "http"}},
		{Scenario: scenario{Name: "tcp", Transport: "tcp", Input: "socket_listener"}, Error: "boom"},
	})
	require.Equal(t, []target{
		{Goal: "agent CPU-µs per line <= 2.5", Scenario: "http", Value: 2, Limit: 2.5, Met: true},
		{Goal: "delivery % >= 99", Scenario: "http", Value: 98, Limit: 99, Met: false},
		{Goal: "agent CPU-µs per line <= 2.5", Scenario: "tcp-paced", Value: 3, Limit: 2.5, Met: false},
		{Goal: "UDP capture % = 100", Scenario: "udp", Value: 100, Limit: 100, Met: true},
	}, ts)
}

func TestReadCounters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "internal.out")
	data := "internal_write,output=influxdb metrics_dropped=5i,buffer_size=10i 1\n" +
		"internal_memstats heap=9i 1\n" +
		"internal_write,output=influxdb metrics_dropped=7i,buffer_size=0i 2\n"
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	c := readCounters(path)
	require.Equal(t, map[string]int64{
		"internal_write,output=influxdb metrics_dropped": 7,
		"internal_write,output=influxdb buffer_size":     0,
	}, c)
	require.Equal(t, []string{"internal_write,output=influxdb metrics_dropped=7"}, dropCounters(c))
	require.Nil(t, readCounters(filepath.Join(t.TempDir(), "missing")))
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags("e2e", []string{"--duration", "3s"}, nil)
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, o.duration)
	_, err = parseFlags("e2e", []string{"--duration", "11m"}, nil)
	require.Error(t, err)
	_, err = parseFlags("e2e", []string{"--agent-core", "4096"}, nil)
	require.Error(t, err)
}

func TestQuietestKeepsTheLeastDisturbedRun(t *testing.T) {
	runs := []result{
		{DeliveryPct: 50, ForeignCPUPct: 30},
		{Error: "boom"},
		{DeliveryPct: 60, ForeignCPUPct: 2},
		{DeliveryPct: 55, ForeignCPUPct: 10},
	}
	best := quietest(runs)
	require.Equal(t, 60.0, best.DeliveryPct)
	require.Len(t, best.OtherRuns, 3)
	require.Equal(t, "boom", best.OtherRuns[1].Error)

	failed := quietest([]result{{Error: "a"}, {Error: "b"}})
	require.Equal(t, "a", failed.Error)
}

func TestExitCode(t *testing.T) {
	missed := &report{Results: []result{{}}, Targets: []target{{Met: false}}}
	require.Equal(t, 0, missed.exitCode(false), "a missed target is a finding")
	require.Equal(t, 1, missed.exitCode(true))
	broken := &report{Results: []result{{Error: "agent did not start"}}}
	require.Equal(t, 1, broken.exitCode(false))
}

// TestIoTDBScenario: the IoTDB scenario's agent writes with outputs.iotdb instead of the
// InfluxDB output, its delivered rows are what the agent says it wrote as it stopped, and
// its CPU goal is issue 39's.
func TestIoTDBScenario(t *testing.T) {
	conf := agentConfig{Input: "influxdb_listener", Listen: "127.0.0.1:1", IoTDBURL: "http://127.0.0.1:2", IoTDBDatabase: "root.bench.r1"}.render()
	require.Contains(t, conf, "[[outputs.iotdb]]\n  namedrop = [\"internal*\"]\n  url = \"http://127.0.0.1:2\"\n  database = \"root.bench.r1\"")
	require.NotContains(t, conf, "outputs.influxdb")

	log := filepath.Join(t.TempDir(), "morse.log")
	require.NoError(t, os.WriteFile(log, []byte("I! [agent] shutting down\nmorse: outputs.iotdb: 0 metrics left unsent (written 12346, dropped 654)\n"+
		"morse: outputs.file: 0 metrics left unsent (written 242, dropped 0)\n"), 0o600))
	w, d, ok := finalCounts(log)
	require.True(t, ok)
	require.Equal(t, []int64{12346, 654}, []int64{w, d})

	over := result{LinesSent: 1000, LoadSec: 2}
	over.setWritten(1040)
	require.Equal(t, []float64{1000, 40, 100, 500}, []float64{float64(over.LinesDelivered), float64(over.Duplicates), over.DeliveryPct, over.DeliveredPerSec})

	r := result{Scenario: scenario{Name: "http-iotdb", Transport: "http", Input: "influxdb_listener", Sink: sinkIoTDB}, CPUMicrosLine: 0.8, DeliveryPct: 100}
	require.Equal(t, []target{{Goal: "agent CPU-µs per row <= 1 (IoTDB)", Scenario: "http-iotdb", Value: 0.8, Limit: 1, Met: true},
		{Goal: "delivery % >= 99", Scenario: "http-iotdb", Value: 100, Limit: 99, Met: true}}, evaluate([]result{r}))
	require.Equal(t, "outputs.iotdb", r.Scenario.missing(map[string]bool{"inputs.influxdb_listener": true, "inputs.internal": true, "outputs.file": true}))
}
