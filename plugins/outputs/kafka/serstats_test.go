package kafka

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// TestSerializerStats: preparing a batch counts it in internal_serializer, tagged with the
// data format: every metric handed over, the bytes of the values, and the metrics that could
// not be serialized. It needs no broker: preparing comes before sending.
func TestSerializerStats(t *testing.T) {
	for _, format := range []string{"influx", "json"} {
		t.Run(format, func(t *testing.T) {
			k := New()
			k.Topic = "metrics"
			k.DataFormat = format
			k.SetLogger(testutil.QuietLogger())
			require.NoError(t, k.Init())
			reg := selfstat.New()
			k.SetSelfStats(reg)
			k.w.init(k)
			ts := time.Unix(1_700_000_000, 0)
			batch := []morse.Metric{
				morse.NewMetric("a", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, ts),
				morse.NewMetric("b", nil, []morse.Field{{Key: "v", Value: morse.Float(2.5)}}, ts),
				morse.NewMetric("nan", nil, []morse.Field{{Key: "v", Value: morse.Float(math.NaN())}}, ts),
			}
			j := k.w.prepare(batch)
			defer k.w.release(j)
			values := 0
			for _, r := range j.recs {
				values += len(r.Value)
			}
			require.Len(t, j.recs, 2)
			snap := reg.Snapshot()
			require.Len(t, snap, 1)
			require.Equal(t, []selfstat.Tag{{Key: "type", Value: format}}, snap[0].Tags)
			got := map[string]int64{}
			for _, f := range snap[0].Fields {
				got[f.Key] = f.Value
			}
			require.Equal(t, int64(3), got["metrics_serialized"])
			require.Equal(t, int64(values), got["bytes_serialized"])
			require.Equal(t, int64(1), got["errors"], "the NaN metric")
		})
	}
}
