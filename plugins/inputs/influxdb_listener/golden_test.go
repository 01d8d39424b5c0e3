package influxdblistener

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestGoldenRealGather writes cpu lines to a real listener on a loopback port, with a
// database and a retention policy, and compares what it adds with the golden list.
func TestGoldenRealGather(t *testing.T) {
	shapes := loadGolden(t)
	l := newListener(t, func(l *InfluxDBListener) {
		_, err := toml.Decode(shapes.Config, l)
		require.NoError(t, err)
	})
	acc, _ := start(t, l)
	var body strings.Builder
	for i := range 5 {
		fmt.Fprintf(&body, "cpu,cpu=cpu%d,host=foo,datacenter=us-east usage_idle=99,usage_busy=1\n", i)
	}
	a := newClient(t, l.Addr(), nil).must("POST", "/write?db=telegraf&rp=weekly", []byte(body.String()))
	require.Equal(t, http.StatusNoContent, a.status, a.body)
	ms := acc.Metrics()
	require.Len(t, ms, 5)
	require.Empty(t, shapes.Check(ms))
	require.Equal(t, []string{"cpu: tag database: missing"}, shapes.Check([]morse.Metric{ms[0].WithoutTag("database")}))
	v, _ := ms[0].Tag("retention_policy")
	require.Equal(t, "weekly", v)
}
