package iotdb

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

var u0 = time.UnixMilli(1_700_000_000_000)

func testBuilder() *builder {
	return &builder{set: settings{database: "root.db", precision: time.Millisecond, uint64To: "int64_clip", sanitize: "1.x"}}
}

// TestTabletBody: mixed devices go to a tablet each, a row whose value changes type goes to
// the device's next tablet, missing values are nulls, and the body is JSON IoTDB reads.
func TestTabletBody(t *testing.T) {
	b := testBuilder()
	h1 := []morse.Tag{{Key: "host", Value: "h-1"}}
	b.build([]morse.Metric{
		morse.NewMetric("cpu", h1, []morse.Field{{Key: "a", Value: morse.Int(1)}, {Key: "s", Value: morse.String("x\"y")}}, u0),
		morse.NewMetric("root.sg.mem", nil, []morse.Field{{Key: "f", Value: morse.Float(0.5)}}, u0),
		morse.NewMetric("cpu", h1, []morse.Field{{Key: "a", Value: morse.Float(2.5)}}, u0.Add(time.Second)),
		morse.NewMetric("cpu", h1, []morse.Field{{Key: "s", Value: morse.String("z")}, {Key: "u", Value: morse.Uint(math.MaxUint64)}}, u0.Add(2*time.Second)),
		morse.NewMetric("cpu", nil, []morse.Field{{Key: "n", Value: morse.Float(math.NaN())}}, u0),
	})
	require.Equal(t, []int{4}, b.failed)
	var bodies []string
	for _, tab := range b.list() {
		body := tab.appendBody(nil)
		require.True(t, json.Valid(body), "%s", body)
		bodies = append(bodies, string(body))
	}
	require.Equal(t, []string{
		`{"device":"root.db.cpu.` + "`h-1`" + `","is_aligned":false,"timestamps":[1700000000000,1700000002000],"measurements":["a","s","u"],"data_types":["INT64","TEXT","INT64"],"values":[[1,null],["x\"y","z"],[null,9223372036854775807]]}`,
		`{"device":"root.sg.mem","is_aligned":false,"timestamps":[1700000000000],"measurements":["f"],"data_types":["DOUBLE"],"values":[[0.5]]}`,
		`{"device":"root.db.cpu.` + "`h-1`" + `","is_aligned":false,"timestamps":[1700000001000],"measurements":["a"],"data_types":["DOUBLE"],"values":[[2.5]]}`,
	}, bodies)
}

// TestBuilderKeepsDevices: the devices and columns kept from one batch to the next do not
// show in the next batch's bodies: a column without a value in a batch is left out, one that
// held another type in an earlier batch takes this batch's, a device reached by another
// identity (a tag value quoted or not) shares its tablet, a repeated field key keeps its
// first value, and new settings start afresh.
func TestBuilderKeepsDevices(t *testing.T) {
	b := testBuilder()
	bodies := func(batch ...morse.Metric) []string {
		b.build(batch)
		var out []string
		for _, tab := range b.list() {
			out = append(out, string(tab.appendBody(nil)))
		}
		return out
	}
	web := func(v string) []morse.Tag { return []morse.Tag{{Key: "host", Value: v}} }
	require.Equal(t, []string{
		`{"device":"root.db.m.` + "`w-1`" + `","is_aligned":false,"timestamps":[1700000000000],"measurements":["a","b"],"data_types":["INT64","BOOLEAN"],"values":[[1],[true]]}`,
	}, bodies(morse.NewMetric("m", web("w-1"), []morse.Field{{Key: "a", Value: morse.Int(1)}, {Key: "b", Value: morse.Bool(true)}}, u0)))
	require.Equal(t, []string{
		`{"device":"root.db.m.` + "`w-1`" + `","is_aligned":false,"timestamps":[1700000001000,1700000002000],"measurements":["a","c"],"data_types":["DOUBLE","TEXT"],"values":[[0.5,null],[null,"x"]]}`,
	}, bodies(
		morse.NewMetric("m", web("w-1"), []morse.Field{{Key: "a", Value: morse.Float(0.5)}, {Key: "a", Value: morse.Int(9)}}, u0.Add(time.Second)),
		morse.NewMetric("m", web("`w-1`"), []morse.Field{{Key: "c", Value: morse.String("x")}}, u0.Add(2*time.Second)),
	))
	b.set.database = "root.other"
	require.Equal(t, []string{
		`{"device":"root.other.m.` + "`w-1`" + `","is_aligned":false,"timestamps":[1700000000000],"measurements":["a"],"data_types":["INT64"],"values":[[2]]}`,
	}, bodies(morse.NewMetric("m", web("w-1"), []morse.Field{{Key: "a", Value: morse.Int(2)}}, u0)))
	require.Len(t, b.byDevice, 1)
	require.Len(t, b.byIdentity, 1)
}

// TestTagLevels: Telegraf's rules for tag values in a path.
func TestTagLevels(t *testing.T) {
	b := testBuilder()
	for v, want := range map[string]string{"web1": "web1", "web-1": "`web-1`", "123": "`123`", "`ok`": "`ok`", "a b": "`a b`"} {
		got, err := b.appendLevel(nil, v)
		require.NoError(t, err, v)
		require.Equal(t, want, string(got), v)
	}
	for _, v := range []string{"root", "a`b", "`a`b`", "`"} {
		_, err := b.appendLevel(nil, v)
		require.Error(t, err, v)
	}
	b.set.sanitize = ""
	got, _ := b.appendLevel(nil, "web-1")
	require.Equal(t, "web-1", string(got), "unset: as it is")
}

// TestClassify reads the answers IoTDB 2.0.1-beta gave on this machine (issue 39).
func TestClassify(t *testing.T) {
	tab := &tablet{device: "root.db.d", positions: []int{0, 1}}
	tab.addColumn("a", typeInt64)
	batch := []morse.Metric{
		morse.NewMetric("d", nil, []morse.Field{{Key: "a", Value: morse.Float(1)}}, u0),
		morse.NewMetric("d", nil, []morse.Field{{Key: "b", Value: morse.Float(1)}}, u0),
	}
	tab.addColumn("b", typeDouble)
	for _, c := range []struct {
		status, code int
		msg          string
		want         morse.WriteOutcome
		reason       string
	}{
		{200, 200, "SUCCESS_STATUS", morse.OutcomeWritten, ""},
		{200, 507, "Fail to insert measurements [a] caused by [data type of root.db.d.a is not consistent, registered type INT64, inserting type DOUBLE, timestamp 1, value 1.0]", morse.OutcomePartial, morse.ReasonFieldTypeConflict},
		{200, 507, "TSStatus(code:502, message:Too many timeseries in memory without device template(current memory: 25949208, series num: 92434). To optimize memory, DEVICE TEMPLATE is more recommended when devices have same time series.)", morse.OutcomePartial, ReasonSchemaLimit},
		{200, 509, "root.db.d is not a legal path", morse.OutcomeDropped, ReasonIllegalPath},
		{200, 509, "a b is not a legal path", morse.OutcomeDropped, ReasonIllegalPath}, // rejected: isolated
		{200, 305, "Index 1 out of bounds for length 1", morse.OutcomeDropped, ReasonInvalid},
		{200, 606, "unsupported data type: class java.lang.String", morse.OutcomeDropped, ReasonInvalid},
		{200, 606, "write process rejected: memory", morse.OutcomeRetry, ""},
		{200, 600, "system read only", morse.OutcomeRetry, ""},
		{401, 801, "WRONG_LOGIN_PASSWORD", morse.OutcomeRetry, ""},
		{401, 800, "INIT_AUTH_ERROR", morse.OutcomeRetry, ""},
		{500, 0, "Error 500 Request failed.", morse.OutcomeRetry, ""},
		{404, 0, "Not Found", morse.OutcomeRetry, ""},
		{415, 0, "Unsupported Media Type", morse.OutcomeDropped, ReasonInvalid},
	} {
		t.Run(fmt.Sprint(c.code, c.status), func(t *testing.T) {
			err := classify(answer{status: c.status, code: c.code, msg: c.msg, header: http.Header{}}, "u", tab, batch, false)
			require.Equal(t, c.want, morse.Classify(err), "%v", err)
			if c.reason == "" {
				return
			}
			var reason string
			switch e := err.(type) {
			case *morse.PartialWriteError:
				reason = e.Reason
				want := []int{0, 1} // no measurement named: every row
				if c.reason == morse.ReasonFieldTypeConflict {
					want = []int{0} // only the row that held a
				}
				require.Equal(t, want, e.Indices)
			case *morse.PermanentError:
				reason = e.Reason
			case *morse.RejectedError:
				reason = e.Reason
			}
			require.Equal(t, c.reason, reason)
		})
	}
}

// BenchmarkSerialize builds the tablets and bodies of a 1000-metric batch: 10 devices (cpu
// of 10 hosts) of 100 rows, 6 fields each, as metrics (expanded) and as the line metrics a
// listener hands over (lines). Wall time per metric (ns/metric) is inflated on a shared
// machine; the process's CPU time per metric (cpu-ns/metric) is the figure to hold to issue
// 39's target of 200 ns, and allocs/metric to its 0.
func BenchmarkSerialize(b *testing.B) {
	var text strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&text, "cpu,cpu=cpu-total,host=host%d usage_user=%g,usage_system=3.25,usage_idle=80.125,iowait=%di,running=true,state=\"ok\" %d\n",
			i%10, 12.5+float64(i), i, u0.Add(time.Duration(i)*time.Millisecond).UnixNano())
	}
	for _, lines := range []bool{false, true} {
		p := influx.Parser{LineMetrics: func() bool { return lines }}
		var batch []morse.Metric
		p.Parse([]byte(text.String()), func(m morse.Metric) { batch = append(batch, m) })
		require.Len(b, batch, 1000)
		_, isLine := batch[0].Line()
		require.Equal(b, lines, isLine)
		b.Run(map[bool]string{false: "expanded", true: "lines"}[lines], func(b *testing.B) { benchSerialize(b, batch) })
	}
}

func benchSerialize(b *testing.B, batch []morse.Metric) {
	bl := testBuilder()
	var body []byte
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu := testutil.CPUTime(b)
	for b.Loop() {
		bl.build(batch)
		for _, tab := range bl.list() {
			body = tab.appendBody(body[:0])
		}
	}
	cpu = testutil.CPUTime(b) - cpu
	runtime.ReadMemStats(&ms1)
	require.Empty(b, bl.failed)
	metrics := float64(b.N * len(batch))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/metrics, "ns/metric")
	b.ReportMetric(float64(cpu.Nanoseconds())/metrics, "cpu-ns/metric")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/metrics, "allocs/metric")
}
