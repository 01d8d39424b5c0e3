package influxdbv2

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestQuestDBV2Write: QuestDB 9.1.0 serves InfluxDB's /api/v2/write; everything the output
// writes there, identity and gzip, is stored with its types.
func TestQuestDBV2Write(t *testing.T) {
	q := testserver.StartQuestDB(t, testserver.QuestDBOptions{})
	for _, enc := range []string{"identity", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			table := "qv2_" + enc
			o := connected(t, q.URL(), func(o *InfluxDBv2) { o.ContentEncoding = enc })
			base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var batch []morse.Metric
			for i := range 100 {
				batch = append(batch, metric(t, table, map[string]string{"host": "h" + strconv.Itoa(i%3)},
					map[string]any{"f": float64(i) + 0.5, "i": int64(i), "s": "v" + strconv.Itoa(i), "b": i%2 == 0},
					base.Add(time.Duration(i)*time.Millisecond)))
			}
			require.NoError(t, o.Write(testutil.Context(t), batch))
			q.WaitCount(t, table, 100, 30*time.Second)
			res := q.MustQuery(t, "SELECT host, f, i, s, b FROM "+table+" WHERE i = 7")
			require.Len(t, res.Dataset, 1)
			types := map[string]string{}
			for _, c := range res.Columns {
				types[c.Name] = c.Type
			}
			require.Equal(t, map[string]string{"host": "SYMBOL", "f": "DOUBLE", "i": "LONG", "s": "VARCHAR", "b": "BOOLEAN"}, types)
			require.Equal(t, "[h1 7.5 7 v7 false]", fmt.Sprint(res.Dataset[0]), "the values, as QuestDB's JSON gives them")
		})
	}
}
