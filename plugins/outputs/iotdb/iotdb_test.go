package iotdb_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/outputs/iotdb"
)

// One IoTDB serves every test of the package; each test writes under a database of its own.
func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedIoTDB()
	os.Exit(code)
}

func newOutput(t *testing.T, srv *testserver.IoTDB, database string) *iotdb.IoTDB {
	t.Helper()
	o := iotdb.New()
	o.URL = srv.URL()
	o.Database = database
	o.TimestampUnit = "millisecond" // the server's precision
	require.NoError(t, o.Init())
	t.Cleanup(func() { _ = o.Close() })
	return o
}

var t0 = time.UnixMilli(1_700_000_000_000)

// TestRoundTripEveryType writes every morse value type, with tags as device levels, and
// reads values and IoTDB's types back.
func TestRoundTripEveryType(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.rt")
	batch := []morse.Metric{
		morse.NewMetric("m", []morse.Tag{{Key: "host", Value: "h1"}}, []morse.Field{
			{Key: "f", Value: morse.Float(1.5)}, {Key: "i", Value: morse.Int(-7)},
			{Key: "u", Value: morse.Uint(math.MaxUint64)}, {Key: "s", Value: morse.String("a \"q\"\n")},
			{Key: "b", Value: morse.Bool(true)}, {Key: "nan", Value: morse.Float(math.NaN())},
			{Key: "fi", Value: morse.Float(-3)}, {Key: "fx", Value: morse.Float(0.1)}, {Key: "fe", Value: morse.Float(1e-300)},
		}, t0),
		morse.NewMetric("m", []morse.Tag{{Key: "host", Value: "h1"}}, []morse.Field{{Key: "i", Value: morse.Int(8)}}, t0.Add(time.Second)),
	}
	require.NoError(t, o.Write(testutil.Context(t), batch))
	r := srv.Query(t, "select f, i, u, s, b, fi, fx, fe from root.rt.m.h1")
	require.Equal(t, []string{"root.rt.m.h1.f", "root.rt.m.h1.i", "root.rt.m.h1.u", "root.rt.m.h1.s", "root.rt.m.h1.b",
		"root.rt.m.h1.fi", "root.rt.m.h1.fx", "root.rt.m.h1.fe"}, r.Expressions)
	require.Equal(t, []string{"DOUBLE", "INT64", "INT64", "TEXT", "BOOLEAN", "DOUBLE", "DOUBLE", "DOUBLE"}, r.DataTypes)
	require.Equal(t, []int64{t0.UnixMilli(), t0.UnixMilli() + 1000}, r.Timestamps)
	require.Equal(t, [][]any{
		{json.Number("1.5"), nil}, {json.Number("-7"), json.Number("8")},
		{json.Number("9223372036854775807"), nil}, {"a \"q\"\n", nil}, {true, nil},
		{json.Number("-3.0"), nil}, {json.Number("0.1"), nil}, {json.Number("1.0E-300"), nil},
	}, r.Values)
}

// TestTagsAsFields stores tags as TEXT measurements of the metric's device, and uint64 as
// text when asked.
func TestTagsAsFields(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.tf")
	o.TreatTagsAs, o.ConvertUint64To = "fields", "text"
	require.NoError(t, o.Init())
	m := morse.NewMetric("cpu", []morse.Tag{{Key: "host", Value: "web-1"}}, []morse.Field{{Key: "u", Value: morse.Uint(math.MaxUint64)}}, t0)
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{m}))
	r := srv.Query(t, "select u, host from root.tf.cpu")
	require.Equal(t, []string{"TEXT", "TEXT"}, r.DataTypes)
	require.Equal(t, [][]any{{"18446744073709551615"}, {"web-1"}}, r.Values)
}

// TestTypeConflict: a value of another type than its series holds, inside one batch and
// against stored data, drops exactly the metrics that carried it; their other fields and the
// other metrics are stored.
func TestTypeConflict(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.tc")
	srv.NonQuery(t, "create timeseries root.tc.d.h1.v with datatype=INT64")
	tag := []morse.Tag{{Key: "host", Value: "h1"}}
	batch := []morse.Metric{
		morse.NewMetric("d", tag, []morse.Field{{Key: "v", Value: morse.Int(1)}}, t0),
		morse.NewMetric("d", tag, []morse.Field{{Key: "v", Value: morse.Float(2.5)}, {Key: "ok", Value: morse.Int(2)}}, t0.Add(time.Second)),
		morse.NewMetric("d", tag, []morse.Field{{Key: "v", Value: morse.String("x")}}, t0.Add(2*time.Second)),
		morse.NewMetric("d", tag, []morse.Field{{Key: "ok", Value: morse.Int(4)}}, t0.Add(3*time.Second)),
	}
	err := o.Write(testutil.Context(t), batch)
	require.Equal(t, morse.OutcomePartial, morse.Classify(err), "%v", err)
	pw, _ := errors.AsType[*morse.PartialWriteError](err)
	written, dropped := pw.Split(len(batch))
	require.Equal(t, []int{2, 2}, []int{written, dropped}, "%v", err)
	require.Equal(t, morse.ReasonFieldTypeConflict, pw.Reason)
	require.ElementsMatch(t, []int{1, 2}, append(append([]int{}, pw.Indices...), indices(pw.More)...))
	r := srv.Query(t, "select v, ok from root.tc.d.h1")
	require.Equal(t, []int64{t0.UnixMilli(), t0.UnixMilli() + 1000, t0.UnixMilli() + 3000}, r.Timestamps)
	require.Equal(t, [][]any{{json.Number("1"), nil, nil}, {nil, json.Number("2"), json.Number("4")}}, r.Values)
}

func indices(parts []*morse.PartialWriteError) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p.Indices...)
	}
	return out
}

// TestWrongCredentials: IoTDB's 401 with code 801 is retryable and unauthorized, so that
// unauthorized_retry_max_age applies; nothing is stored.
func TestWrongCredentials(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.auth")
	o.Password = "wrong"
	err := o.Write(testutil.Context(t), []morse.Metric{morse.NewMetric("x", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, t0)})
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	require.ErrorIs(t, err, morse.ErrUnauthorized)
	var serr *iotdb.ServerError
	require.ErrorAs(t, err, &serr)
	require.Equal(t, 801, serr.Code)
}

// TestIllegalDevice: a device IoTDB cannot name is dropped for good as illegal_path; a
// tag value that would be one is quoted with sanitize_tag and stored.
func TestIllegalDevice(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.ill")
	m := morse.NewMetric("cpu", []morse.Tag{{Key: "host", Value: "web-1"}}, []morse.Field{{Key: "v", Value: morse.Int(1)}}, t0)
	err := o.Write(testutil.Context(t), []morse.Metric{m})
	pe, ok := errors.AsType[*morse.PermanentError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, iotdb.ReasonIllegalPath, pe.Reason)
	o.SanitizeTag = "1.3"
	require.NoError(t, o.Init())
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{m}))
	r := srv.Query(t, "select v from root.ill.cpu.`web-1`")
	require.Equal(t, [][]any{{json.Number("1")}}, r.Values)
}

// TestTypeAgainstStoredSeries writes each morse value type into a series that already holds
// each IoTDB type, and holds IoTDB 2.0.1-beta to what docs/telegraf-compat.md says of it:
// a value of the series' own type is stored; an integer into a DOUBLE series is stored as a
// double; every other pair is refused with 507 and counted, for the metric that carried it
// alone, as field_type_conflict.
func TestTypeAgainstStoredSeries(t *testing.T) {
	srv := testserver.SharedIoTDB(t)
	o := newOutput(t, srv, "root.tm")
	series := []string{"BOOLEAN", "INT64", "DOUBLE", "TEXT"}
	values := map[string]morse.Value{"bool": morse.Bool(true), "int": morse.Int(3), "float": morse.Float(2.5), "string": morse.String("x")}
	kinds := []string{"bool", "int", "float", "string"}
	stored := map[string]bool{ // series/value: what IoTDB takes
		"BOOLEAN/bool": true, "INT64/int": true, "DOUBLE/float": true, "TEXT/string": true, "DOUBLE/int": true,
	}
	var batch []morse.Metric
	for _, s := range series {
		for _, k := range kinds {
			srv.NonQuery(t, "create timeseries root.tm."+s+"_"+k+".v with datatype="+s)
			batch = append(batch, morse.NewMetric(s+"_"+k, nil, []morse.Field{{Key: "v", Value: values[k]}}, t0))
		}
	}
	err := o.Write(testutil.Context(t), batch)
	pw, ok := errors.AsType[*morse.PartialWriteError](err)
	require.True(t, ok, "%v", err)
	written, dropped := pw.Split(len(batch))
	require.Equal(t, []int{len(stored), len(batch) - len(stored)}, []int{written, dropped}, "%v", err)
	require.Equal(t, morse.ReasonFieldTypeConflict, pw.Reason)
	for i, m := range batch {
		name := m.Name()
		s, k, _ := strings.Cut(name, "_")
		refused := slices.Contains(append(append([]int{}, pw.Indices...), indices(pw.More)...), i)
		require.Equal(t, !stored[s+"/"+k], refused, "%s into %s", k, s)
		if stored[s+"/"+k] {
			r := srv.Query(t, "select v from root.tm."+name)
			require.Equal(t, []string{s}, r.DataTypes, name)
			require.Len(t, r.Values, 1, name)
		}
	}
	r := srv.Query(t, "select v from root.tm.DOUBLE_int")
	require.Equal(t, [][]any{{json.Number("3.0")}}, r.Values, "the integer is stored as a double")
}
