package socketwriter

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	socketlistener "github.com/morse-agent/morse/plugins/inputs/socket_listener"
	"github.com/morse-agent/morse/plugins/serializers/influx"
	"github.com/morse-agent/morse/selfstat"
)

// TestSerializerStats: every transport counts what it serializes in internal_serializer,
// type=influx: the metrics handed over, the bytes of line protocol before any gzip, and the
// metrics that could not be written.
func TestSerializerStats(t *testing.T) {
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			addr, acc, _ := listen(t, network+"://127.0.0.1:0", func(l *socketlistener.SocketListener) { l.ContentEncoding = "gzip" })
			reg := selfstat.New()
			w := writer(t, addr, func(w *SocketWriter) { w.ContentEncoding = "gzip"; w.SetSelfStats(reg) })
			batch := batchOf(t, "m", 10)
			// A metric whose only field is NaN cannot be written as line protocol.
			bad := morse.NewMetric("nan", nil, []morse.Field{{Key: "f", Value: morse.Float(math.NaN())}}, time.Unix(1, 0))
			_ = w.Write(testutil.Context(t), append(batch, bad))
			waitFor(t, acc, len(batch))
			ser := influx.New(influx.Options{})
			var want []byte
			for _, m := range batch {
				var err error
				want, err = ser.AppendMetric(want, m)
				require.NoError(t, err)
			}
			snap := reg.Snapshot()
			require.Len(t, snap, 1)
			require.Equal(t, "internal_serializer", snap[0].Measurement)
			require.Equal(t, []selfstat.Tag{{Key: "type", Value: "influx"}}, snap[0].Tags)
			got := map[string]int64{}
			for _, f := range snap[0].Fields {
				got[f.Key] = f.Value
			}
			require.Equal(t, int64(11), got["metrics_serialized"])
			require.Equal(t, int64(len(want)), got["bytes_serialized"], "line protocol, before gzip")
			require.Equal(t, int64(1), got["errors"])
			require.Contains(t, got, "serialization_time_ns")
		})
	}
}
