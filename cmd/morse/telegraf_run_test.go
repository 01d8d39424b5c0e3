package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// runDir holds Telegraf configs written as operators write them, each using only plugins
// morse has: a helm chart's, an ansible role's, a compose stack's, a Debian host's
// telegraf.conf with its telegraf.d, and configs of the data formats, processors and
// aggregators. data/ holds the files they read.
var runDir = filepath.Join("testdata", "telegraf-run")

// operatorEnv sets what the configs read from the environment, as a pod spec, a compose
// file's .env or a unit's EnvironmentFile would, and makes what they point at: TLS files
// with the names the ansible role gives them, and a pid file of a running process. The
// variables the configs give defaults to are left unset. It returns the data directory.
func operatorEnv(t *testing.T) (data string, sleeperPid int) {
	data, err := filepath.Abs(filepath.Join(runDir, "data"))
	require.NoError(t, err)
	certs := testutil.NewCerts(t)
	run := t.TempDir()
	sleeperPid = startSleeper(t)
	writeFile(t, run, "app.pid", strconv.Itoa(sleeperPid)+"\n")
	for k, v := range map[string]string{
		"HOSTNAME": "telegraf-ds-x7k2p", "NODE_NAME": "node-a", "DATACENTER": "fra",
		"INFLUX_URL": "http://127.0.0.1:8086", "INFLUX_TOKEN": "s3cr3t-token", "INFLUX_ORG": "acme", "INFLUX_BUCKET": "k8s",
		"INFLUX_PASSWORD": "changeme", "TLS_DIR": filepath.Dir(certs.CA), "RUN_DIR": run, "APP_EXE": "sleep",
		"TELEGRAF_INTERVAL": "10s", "DOCKER_INFLUXDB_INIT_ADMIN_TOKEN": "s3cr3t-token",
		"DOCKER_INFLUXDB_INIT_ORG": "acme", "DOCKER_INFLUXDB_INIT_BUCKET": "stack", "LISTENER_ADDRESS": "127.0.0.1:0",
		"DATA_DIR": data, "LOG_DIR": data, "SPOOL_DIR": filepath.Join(data, "spool"),
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"CLUSTER_NAME", "COMPOSE_PROJECT_NAME", "KAFKA_TOPIC", "GRAPHITE_LISTEN"} {
		t.Setenv(k, "") // restored when the test ends
		require.NoError(t, os.Unsetenv(k))
	}
	return data, sleeperPid
}

// runCase is one config of runDir under `morse --test`.
type runCase struct {
	name  string
	args  []string          // the config's flags, paths relative to runDir
	names []string          // measurements that must be printed
	tags  map[string]string // tags that every printed metric carries
	lines []string          // printed lines, or their beginnings up to the timestamp
}

func (c runCase) flags() []string {
	out := slices.Clone(c.args)
	for i, a := range out {
		if i > 0 && strings.HasPrefix(out[i-1], "--config") {
			out[i] = filepath.Join(runDir, a)
		}
	}
	return out
}

// TestTelegrafConfigsRunAsWritten: each config of runDir, with its environment set, loads,
// runs `morse --test` to exit 0 and prints what its inputs read, through its processors
// and aggregators; `morse config check` finds nothing unsupported in it.
func TestTelegrafConfigsRunAsWritten(t *testing.T) {
	for _, c := range runCases(operatorEnv(t)) {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := runMorse(t, append(c.flags(), "--test")...)
			require.Zero(t, code, stderr)
			require.NotContains(t, stderr, " E! ", "nothing fails")
			got := byName(parseTestOutput(t, out))
			for _, name := range c.names {
				require.NotEmpty(t, got[name], "%s is printed:\n%s", name, out)
			}
			for _, ms := range got {
				for _, m := range ms {
					for k, v := range c.tags {
						tv, _ := m.Tag(k)
						require.Equal(t, v, tv, "tag %s of %s", k, m.Name())
					}
				}
			}
			for _, line := range c.lines {
				require.Contains(t, out, line)
			}
			requireCheckRuns(t, c.flags())
		})
	}
}

// runCases are the configs of runDir that --test runs alone, with what each prints given
// operatorEnv's data directory and process.
func runCases(data string, pid int) []runCase {
	system := []string{"cpu", "disk", "mem", "system"}
	return []runCase{{
		name: "helm chart", args: []string{"--config", "helm-daemonset.conf"},
		names: append(system, "diskio", "kernel", "net", "processes", "swap"),
		tags:  map[string]string{"host": "telegraf-ds-x7k2p", "node": "node-a", "dc": "fra", "cluster": "dev"},
	}, {
		name: "ansible role", args: []string{"--config", "ansible-role.conf"},
		names: append(system, "diskio", "kernel", "processes", "swap", "net", "netstat", "nstat", "procstat", "procstat_lookup"),
		tags:  map[string]string{"host": "web-01.example.internal", "environment": "production", "role": "web"},
		lines: []string{fmt.Sprintf("> procstat_lookup,environment=production,host=web-01.example.internal,pid_finder=pgrep,"+
			"pidfile=%s,result=success,role=web pid_count=1i,result_code=0i,running=1i ", filepath.Join(os.Getenv("RUN_DIR"), "app.pid")),
			",pid=" + strconv.Itoa(pid) + ",pidfile="},
	}, {
		name: "compose stack", args: []string{"--config", "compose-stack.conf"},
		names: append(system, "net", "internal_agent", "internal_gather"),
		tags:  map[string]string{"host": "telegraf", "stack": "monitoring"},
	}, {
		name: "telegraf.d", args: []string{"--config", "debian/telegraf.conf", "--config-directory", "debian/telegraf.d"},
		names: append(system, "swap", "diskio", "app_jobs"),
		tags:  map[string]string{"host": "db-02", "datacenter": "fra1"},
		lines: []string{"> app_jobs,datacenter=fra1,host=db-02,queue=mailers,spool_file=app.lp failed=2i,pending=0i,running=0i ",
			",team=dba "},
	}, {
		name: "file csv", args: []string{"--config", "file-csv.conf"}, names: []string{"ups_status"},
		lines: []string{
			"> ups_status,host=nas,site=lab,unit=ups1 battery_voltage=27.1,load_percent=23.5,runtime_s=3120i 1709294400000000000\n",
			"> ups_status,host=nas,site=lab,unit=ups2 battery_voltage=26.8,load_percent=41,runtime_s=1890i 1709294400000000000\n",
			"> ups_status,host=nas,site=lab,unit=ups1 battery_voltage=27,load_percent=24,runtime_s=3100i 1709294460000000000\n",
		},
	}, {
		name: "tail grok", args: []string{"--config", "tail-grok.conf"}, names: []string{"nginx_access_log", "app_log"},
		lines: []string{
			"> app_log,component=scheduler,level=INFO,path=" + filepath.Join(data, "app.log") +
				` message="job run finished",took_ms=12.5 1709294400000000000` + "\n",
			"> app_log,component=mailer,level=WARN,path=" + filepath.Join(data, "app.log") +
				` message="slow smtp handshake",took_ms=830 1709294405000000000` + "\n",
			"> nginx_access_log,path=" + filepath.Join(data, "access.log") + `,resp_code=404,service=nginx,verb=GET ` +
				`agent="Go-http-client/1.1",auth="-",client_ip="10.0.0.7",http_version=1.1,ident="-",referrer="-",` +
				`request="/missing",resp_bytes=162i 1709294403000000000` + "\n",
		},
	}, {
		name: "exec json", args: []string{"--config", "exec-json.conf"}, names: []string{"app_status", "app_queue", "app_answer"},
		lines: []string{
			"> app_status,region=eu-west-1,service=checkout queues_0_consumers=2,queues_0_depth=4,queues_1_consumers=1," +
				"queues_1_depth=0,stats_errors=3,stats_latency_ms_p50=12.5,stats_latency_ms_p99=140.2,stats_requests=1200," +
				`version="2.4.1" 1709294400000000000` + "\n",
			"> app_queue,name=orders consumers=2,depth=4 ",
			"> app_queue,name=emails consumers=1,depth=0 ",
			"> app_answer value=42i ",
		},
	}, {
		name: "processors and aggregators", args: []string{"--config", "pipeline.conf"},
		names: []string{"http_requests", "http_requests_stats", "http_requests_range"},
		tags:  map[string]string{"host": "edge-3", "tier": "edge", "pipeline": "v2"},
		lines: []string{
			"> http_requests,backend=api-2,cache=MISS,cache_hit=0,code=404,code_class=4xx,host=edge-3,method=get," +
				"pipeline=v2,route=/missing,tier=edge bytes=162i,latency_ms=3.2 ",
			"> http_requests_stats,backend=api-1,cache=HIT,cache_hit=1,code=200,code_class=2xx,host=edge-3,method=get," +
				"pipeline=v2,route=/index,tier=edge latency_ms_count=1,latency_ms_max=12.5,latency_ms_mean=12.5,latency_ms_min=12.5 ",
			"> http_requests_range,backend=api-1,cache=MISS,cache_hit=0,code=302,code_class=3xx,host=edge-3,method=post," +
				"pipeline=v2,route=/login,tier=edge bytes_max=0,bytes_min=0 ",
		},
	}}
}

// requireCheckRuns runs `morse config check` on the files and directories of a config's
// flags: nothing is unsupported, every variable is set, and morse would run it.
func requireCheckRuns(t *testing.T, flags []string) {
	t.Helper()
	args := []string{"config", "check"}
	for i, a := range flags {
		if i > 0 && strings.HasPrefix(flags[i-1], "--config") {
			args = append(args, a)
		}
	}
	out, stderr, code := runMorse(t, args...)
	require.Zero(t, code, stderr+out)
	require.Contains(t, out, " (0 unsupported), ")
	require.Contains(t, out, ", 0 unsupported\nmorse would run this config\n")
	require.NotContains(t, out, "is not set")
}

// startConfig runs the binary as a service on a config of runDir and returns it and a
// watcher of what its outputs.file writes to stdout.
func startConfig(t *testing.T, conf string) (*exec.Cmd, *logWatcher, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, morseBin, "--config", filepath.Join(runDir, conf))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, watchLog(stdout), &stderr
}

// stopConfig stops a service started by startConfig as systemd would, and requires that
// it exits 0 without an error logged.
func stopConfig(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), stderr.String())
	require.NotContains(t, stderr.String(), " E! ")
}

// TestTelegrafServiceConfigsReceive: the configs of runDir whose inputs are listeners and
// consumers load under --test and, run as a service, print through outputs.file what a
// Graphite sender and a Kafka topic hand them.
func TestTelegrafServiceConfigsReceive(t *testing.T) {
	operatorEnv(t)
	t.Run("socket_listener graphite", func(t *testing.T) {
		addr := testutil.FreeAddr(t)
		t.Setenv("GRAPHITE_LISTEN", addr)
		_, stderr, code := runMorse(t, "--config", filepath.Join(runDir, "socket-graphite.conf"), "--test")
		require.Zero(t, code, stderr)
		requireCheckRuns(t, []string{"--config", filepath.Join(runDir, "socket-graphite.conf")})

		cmd, out, errs := startConfig(t, "socket-graphite.conf")
		var conn net.Conn
		require.Eventually(t, func() bool {
			var err error
			conn, err = net.Dial("tcp", addr)
			return err == nil
		}, 20*time.Second, 10*time.Millisecond, "the listener starts")
		_, err := conn.Write([]byte("servers.web01.cpu.load.shortterm 0.42 1709294400\n" +
			"stats.timers.api.latency 12.5 1709294401\nqueue.depth 7 1709294402\n"))
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		out.waitFor(t, "cpu,host=web01 load_shortterm=0.42 1709294400000000000")
		out.waitFor(t, "timers_api latency=12.5 1709294401000000000")
		out.waitFor(t, "queue_depth,region=eu-central value=7 1709294402000000000")
		stopConfig(t, cmd, errs)
	})
	t.Run("kafka_consumer json_v2", func(t *testing.T) {
		k := testserver.StartKafka(t, testserver.KafkaOptions{})
		t.Setenv("KAFKA_BROKERS", k.Addr())
		k.CreateTopic(t, "iot.readings", 1, nil)
		cl := k.Client(t)
		for _, doc := range []string{
			`{"ts": 1709294400000, "device": {"id": "gw-17", "site": "plant-2"}, "sensors": [{"kind": "temperature", "value": 21.5}, {"kind": "humidity", "value": 40.2}]}`,
			`{"ts": 1709294460000, "device": {"id": "gw-18", "site": "plant-2"}, "sensors": [{"kind": "temperature", "value": 19}]}`,
		} {
			require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "iot.readings", Value: []byte(doc)}).FirstErr())
		}
		cmd, out, errs := startConfig(t, "kafka-json_v2.conf")
		out.waitFor(t, "iot_reading,device=gw-17,kind=temperature,site=plant-2,topic=iot.readings value=21.5 1709294400000000000")
		out.waitFor(t, "iot_reading,device=gw-17,kind=humidity,site=plant-2,topic=iot.readings value=40.2 1709294400000000000")
		out.waitFor(t, "iot_reading,device=gw-18,kind=temperature,site=plant-2,topic=iot.readings value=19 1709294460000000000")
		stopConfig(t, cmd, errs)

		// After the service, which committed what it read: --test would otherwise commit
		// the records for the consumer group before the service could read them.
		_, stderr, code := runMorse(t, "--config", filepath.Join(runDir, "kafka-json_v2.conf"), "--test")
		require.Zero(t, code, stderr)
		requireCheckRuns(t, []string{"--config", filepath.Join(runDir, "kafka-json_v2.conf")})
	})
}

// TestTelegrafFileOutputsWriteEachFormat: a config whose outputs.file tables write JSON,
// Prometheus' text format and carbon2 loads under --test, and --once writes each file in
// its format, as Telegraf's serializers write them.
func TestTelegrafFileOutputsWriteEachFormat(t *testing.T) {
	operatorEnv(t)
	dir := t.TempDir()
	t.Setenv("OUT_DIR", dir)
	conf := filepath.Join(runDir, "file-serializers.conf")
	out, stderr, code := runMorse(t, "--config", conf, "--test")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "> http,code=302,route=/login latency_seconds=0.048,requests_total=85i 1709294400000000000\n")
	requireCheckRuns(t, []string{"--config", conf})

	_, stderr, code = runMorse(t, "--config", conf, "--once")
	require.Zero(t, code, stderr)
	for file, want := range map[string]string{
		"metrics.json": `{"fields":{"latency_seconds":0.012,"requests_total":1200},"name":"http","tags":{"code":"200","route":"/index"},"timestamp":1709294400}
{"fields":{"latency_seconds":0.048,"requests_total":85},"name":"http","tags":{"code":"302","route":"/login"},"timestamp":1709294400}
`,
		"telegraf.prom": `# HELP http_latency_seconds Telegraf collected metric
# TYPE http_latency_seconds untyped
http_latency_seconds{code="200",route="/index"} 0.012
http_latency_seconds{code="302",route="/login"} 0.048
# HELP http_requests_total Telegraf collected metric
# TYPE http_requests_total counter
http_requests_total{code="200",route="/index"} 1200
http_requests_total{code="302",route="/login"} 85
`,
		"metrics.carbon2": `metric=http_requests_total code=200 route=/index  1200 1709294400
metric=http_latency_seconds code=200 route=/index  0.012 1709294400
metric=http_requests_total code=302 route=/login  85 1709294400
metric=http_latency_seconds code=302 route=/login  0.048 1709294400
`,
	} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		require.Equal(t, want, string(got), file)
	}
}
