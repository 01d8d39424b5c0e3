package statsd

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// waitFor bounds every wait on the network in these tests.
const waitFor = 30 * time.Second

// startStatsd starts the plugin as configured on a free loopback port, and stops it when
// the test ends. It returns the plugin and its self-metrics.
func startStatsd(t *testing.T, protocol, config string) (*Statsd, *selfstat.PluginStats) {
	t.Helper()
	s := New()
	s.SetLogger(slog.New(slog.DiscardHandler))
	testutil.Decode(t, `protocol = "`+protocol+`"`+"\nservice_address = \"127.0.0.1:0\"\n"+config, s)
	st := selfstat.NewPluginStats(nil, "internal_statsd", nil)
	s.SetStats(st)
	require.NoError(t, s.Start(context.Background(), &testutil.Accumulator{}))
	t.Cleanup(s.Stop)
	return s, st
}

// gatherUntil gathers every few milliseconds into one accumulator until done says the
// metrics so far are all there.
func gatherUntil(t *testing.T, s *Statsd, done func(ms []morse.Metric) bool) []morse.Metric {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.Eventually(t, func() bool {
		require.NoError(t, s.Gather(context.Background(), acc))
		return done(acc.Metrics())
	}, waitFor, 5*time.Millisecond)
	return acc.Metrics()
}

// byName merges what several gathers reported, by measurement and metric_type: counters
// and set counts added up, the other fields last value wins.
func byName(ms []morse.Metric) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range ms {
		typ, _ := m.Tag("metric_type")
		k := m.Name() + "/" + typ
		if out[k] == nil {
			out[k] = map[string]any{}
		}
		for f, v := range testutil.FieldsOf(m) {
			if n, ok := v.(int64); ok && (typ == "counter" || typ == "set") {
				old, _ := out[k][f].(int64)
				v = old + n
			}
			out[k][f] = v
		}
	}
	return out
}

// TestRealClient sends with the `statsd` Python client from PyPI, over UDP and over TCP,
// and checks what Telegraf reports for the same calls: counters summed (decr included),
// a gauge moved by its deltas, a set's distinct members, a timer's summary, and lines that
// the client packs into one packet (its pipeline).
func TestRealClient(t *testing.T) {
	for _, proto := range []string{"udp", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			s, st := startStatsd(t, proto, "percentiles = [90.0]\ndelete_gauges = false")
			testserver.SendStatsdPython(t, proto, s.Addr().String())
			got := gatherUntil(t, s, func(ms []morse.Metric) bool {
				return byName(ms)["app_piped_latency/timing"] != nil && byName(ms)["app_requests/counter"]["value"] == int64(7)
			})
			m := byName(got)
			require.Equal(t, map[string]any{"value": int64(7)}, m["app_requests/counter"])
			require.Equal(t, map[string]any{"value": int64(1)}, m["app_sampled/counter"])
			require.Equal(t, map[string]any{"value": int64(2)}, m["app_piped/counter"])
			require.Equal(t, map[string]any{"value": 12.0}, m["app_load/gauge"])
			require.Equal(t, map[string]any{"value": int64(2)}, m["app_users/set"])
			require.Equal(t, map[string]any{
				"count": int64(3), "mean": 200.0, "median": 200.0, "sum": 600.0, "upper": 300.0, "lower": 100.0,
				"stddev": 81.64965809277261, "90_percentile": 300.0,
			}, m["app_latency/timing"])
			require.Zero(t, st.Counter("parse_errors").Get())
			if proto == "tcp" {
				require.Equal(t, int64(1), st.Counter("tcp_total_connections").Get())
				require.Positive(t, st.Counter("tcp_packets_received").Get())
			} else {
				require.Positive(t, st.Counter("udp_packets_received").Get())
			}
		})
	}
}

// TestTCPLines checks TCP's framing: lines split across writes, a last line without a
// newline when the sender closes, and a line longer than 64 KiB refused and counted while
// the lines around it are kept.
func TestTCPLines(t *testing.T) {
	s, st := startStatsd(t, "tcp", "")
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	for _, part := range []string{"a:1|c\nsp", "lit:2|c\n", "long:" + strings.Repeat("9", 70<<10) + "|c\n", "b:3|c\nlast:4|c"} {
		_, err := conn.Write([]byte(part))
		require.NoError(t, err)
	}
	require.NoError(t, conn.Close())
	got := byName(gatherUntil(t, s, func(ms []morse.Metric) bool { return len(byName(ms)) == 4 }))
	require.Equal(t, map[string]map[string]any{
		"a/counter": {"value": int64(1)}, "split/counter": {"value": int64(2)},
		"b/counter": {"value": int64(3)}, "last/counter": {"value": int64(4)},
	}, got)
	require.Equal(t, int64(1), st.Counter("parse_errors_line_too_long").Get())
	require.Eventually(t, func() bool { return st.Counter("tcp_current_connections").Get() == 0 }, waitFor, time.Millisecond)
}

// TestMalformedLinesOverTheNetwork sends good and bad lines in one datagram: each bad
// line is counted by its reason, and the good ones around it are kept.
func TestMalformedLinesOverTheNetwork(t *testing.T) {
	s, st := startStatsd(t, "udp", "")
	conn, err := net.Dial("udp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("ok1:1|c\nnocolon\nbad:x|c\nweird:1|q\nok2:2|c\n"))
	require.NoError(t, err)
	got := byName(gatherUntil(t, s, func(ms []morse.Metric) bool { return len(byName(ms)) == 2 }))
	require.Equal(t, map[string]map[string]any{"ok1/counter": {"value": int64(1)}, "ok2/counter": {"value": int64(2)}}, got)
	require.Equal(t, int64(3), st.Counter("parse_errors").Get())
	for _, r := range []string{reasonNoColon, reasonBadValue, reasonBadType} {
		require.Equal(t, int64(1), st.Counter("parse_errors_"+r).Get(), r)
	}
}

// TestValidate reports every bad option at once, each under its key.
func TestValidate(t *testing.T) {
	s := New()
	s.Protocol, s.ServiceAddress, s.MaxTCPConnections = "sctp", "nope", 0
	s.Percentiles = []float64{101}
	s.AllowedPendingMessages, s.NumberWorkerThreads, s.PercentileLimit = -1, 0, -1
	s.SanitizeNamesMethod, s.Templates = "downstream", []string{"host.region"}
	err := s.Validate()
	require.Error(t, err)
	for _, key := range []string{"protocol", "service_address", "max_tcp_connections", "percentiles",
		"allowed_pending_messages", "number_workers_threads", "percentile_limit", "sanitize_name_method", "templates"} {
		require.Contains(t, err.Error(), key+":")
	}
	require.NoError(t, New().Validate(), "the defaults are valid")
}

// TestDeprecatedOptions loads a config written for an older Telegraf through the real
// loader: parse_data_dog_tags, removed in Telegraf 1.35, turns datadog_extensions on
// (config/deprecated.go), and udp_packet_size, which had no effect, is dropped; each with a
// warning.
func TestDeprecatedOptions(t *testing.T) {
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "old.conf", Data: []byte(
		"[[inputs.statsd]]\n  service_address = \"127.0.0.1:0\"\n  parse_data_dog_tags = true\n  udp_packet_size = 1500\n")}}})
	require.NoError(t, err)
	require.Len(t, cfg.Inputs, 1)
	s := cfg.Inputs[0].Plugin.(*Statsd)
	require.True(t, s.DataDogExtensions)
	var keys []string
	for _, w := range cfg.Warnings {
		keys = append(keys, w.Key)
	}
	require.Contains(t, strings.Join(keys, " "), "parse_data_dog_tags")
	require.Contains(t, strings.Join(keys, " "), "udp_packet_size")
}
