package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// testSplunkMetric writes through a real broker with the output built by the config loader
// from a Telegraf table with data_format = "splunkmetric" and HEC routing, as for Splunk
// Connect for Kafka: each metric is one message holding Telegraf's HEC object.
func testSplunkMetric(t *testing.T, srv *testserver.Kafka) {
	const topic = "format-splunkmetric"
	conf := fmt.Sprintf(`
[[outputs.kafka]]
  brokers = [%q]
  topic = %q
  data_format = "splunkmetric"
  splunkmetric_hec_routing = true
  splunkmetric_multimetric = true
`, srv.Addr(), topic)
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "test.conf", Data: []byte(conf)}}})
	require.NoError(t, err)
	k := cfg.Outputs[0].Plugin.(*Kafka)
	require.True(t, k.SplunkMetric.HECRouting && k.SplunkMetric.MultiMetric, "the splunkmetric_* keys reach the embedded options")
	require.False(t, k.WritesLines(), "only influx takes line metrics as they are")
	k.MetadataMinAge = 100 * time.Millisecond
	require.NoError(t, k.Init())
	require.NoError(t, k.Connect(testutil.Context(t)))
	t.Cleanup(func() { require.NoError(t, k.Close()) })

	batch := []morse.Metric{
		morse.NewMetric("cpu", []morse.Tag{{Key: "host", Value: "h1"}, {Key: "cpu", Value: "cpu0"}},
			[]morse.Field{{Key: "usage", Value: morse.Float(42)}, {Key: "system", Value: morse.Float(8.5)}}, time.Unix(1529875740, 819000000)),
		morse.NewMetric("docker", nil, []morse.Field{{Key: "oomkiller", Value: morse.Bool(true)}}, time.Unix(0, 0)),
	}
	require.NoError(t, write(t, k, batch))
	recs := srv.WaitRecords(t, topic, len(batch))
	require.Len(t, recs, 2, "one message per metric")
	require.Equal(t, `{"time":1529875740.819,"event":"metric","host":"h1","fields":{"cpu":"cpu0","metric_name:cpu.system":8.5,"metric_name:cpu.usage":42}}`, string(recs[0].Value))
	require.Equal(t, `{"time":0,"event":"metric","fields":{"metric_name:docker.oomkiller":1}}`, string(recs[1].Value))
}
