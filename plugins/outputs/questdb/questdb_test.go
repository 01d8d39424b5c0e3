package questdb

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestRealQuestDB runs every scenario against one real QuestDB 9.1.0, over HTTP and TCP,
// then restarts it under a TCP stream. Each scenario writes tables of its own.
func TestRealQuestDB(t *testing.T) {
	q := testserver.StartQuestDB(t, testserver.QuestDBOptions{Props: tcpServerProps})
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			t.Run("written is queryable with its types", func(t *testing.T) { testTypes(t, q, p) })
			t.Run("one type conflict in 1000 lines", func(t *testing.T) { testConflictIn1000(t, q, p) })
			t.Run("five tables, one fails", func(t *testing.T) { testFiveTables(t, q, p) })
			t.Run("values QuestDB cannot take", func(t *testing.T) { testUnsupported(t, q, p) })
			t.Run("tag values with backslashes and breaks", func(t *testing.T) { testTagValuesExact(t, q, p) })
		})
	}
	t.Run("tcp/a batch QuestDB refuses", func(t *testing.T) { testPoisonBatch(t, q) })
	t.Run("tcp/the window owns the batches it keeps", func(t *testing.T) { testWindowOwnsBatches(t, q) })
	t.Run("tcp/a bad line mid-flood", func(t *testing.T) { testBadLineMidFlood(t, q) })
	t.Run("tcp/a recovery cut short", func(t *testing.T) { testRecoveryCutShort(t, q) })
	t.Run("tcp/a proxy whose server is down", func(t *testing.T) { testProxyWithServerDown(t, q) })
	t.Run("tcp/TLS terminated in front", func(t *testing.T) { testTLSTerminated(t, q) })
	t.Run("tcp/a cancelled write stops waiting", func(t *testing.T) { testCancelStopsTheWait(t, q) })
	t.Run("tcp/Close during a write", func(t *testing.T) { testCloseDuringWrite(t, q) })
	t.Run("tcp/restart mid-stream loses nothing", func(t *testing.T) { testRestartLosesNothing(t, q) })
}

func testTypes(t *testing.T, q *testserver.QuestDB, p string) {
	table := "types_" + p
	ts := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	batch := []morse.Metric{
		morse.NewMetric(table, []morse.Tag{{Key: "host", Value: "a b,c=d"}, {Key: "dc", Value: "eu"}}, []morse.Field{
			{Key: "i", Value: morse.Int(math.MinInt64 + 1)},
			{Key: "u", Value: morse.Uint(math.MaxInt64)},
			{Key: "f", Value: morse.Float(-1.5e-300)},
			{Key: "s", Value: morse.String("quote \" backslash \\ newline\n tab\t ünïcode")},
			{Key: "b", Value: morse.Bool(true)},
		}, ts),
		// A line metric, as a listener hands it on, with an unsigned integer in its text.
		morse.NewLineMetric(morse.LineText{Text: table + `,host=x,dc=us i=42i,u=7u,f=2,s="line",b=false`, Uints: true}, ts.Add(time.Second)),
	}
	o := newOutput(t, q, p)
	require.NoError(t, write(t, o, batch))
	flush(t, o)
	q.WaitCount(t, table, 2, waitRows)
	res := q.MustQuery(t, "SELECT host, dc, i, u, f, s, b, timestamp FROM "+table+" ORDER BY timestamp")
	require.Equal(t, []testserver.QuestColumn{
		{Name: "host", Type: "SYMBOL"}, {Name: "dc", Type: "SYMBOL"}, {Name: "i", Type: "LONG"}, {Name: "u", Type: "LONG"},
		{Name: "f", Type: "DOUBLE"}, {Name: "s", Type: "VARCHAR"}, {Name: "b", Type: "BOOLEAN"}, {Name: "timestamp", Type: "TIMESTAMP"},
	}, res.Columns)
	n := func(s string) json.Number { return json.Number(s) }
	require.Equal(t, [][]any{
		{"a b,c=d", "eu", n("-9223372036854775807"), n("9223372036854775807"), n("-1.5E-300"),
			"quote \" backslash \\ newline\n tab\t ünïcode", true, "2026-03-04T05:06:07.123456Z"},
		{"x", "us", n("42"), n("7"), n("2.0"), "line", false, "2026-03-04T05:06:08.123456Z"},
	}, res.Dataset, "QuestDB's TIMESTAMP keeps microseconds")
}

func testConflictIn1000(t *testing.T, q *testserver.QuestDB, p string) {
	table := "conflict_" + p
	o := newOutput(t, q, p)
	// The table exists, v a LONG, before the batch comes.
	require.NoError(t, write(t, o, rows(table, 0, 1, now)))
	confirmed(t, o)
	batch := rows(table, 1, 1000, now)
	bad := rand.New(rand.NewPCG(1, 2)).IntN(1000)
	batch[bad] = batch[bad].WithField("v", morse.String("not a number"))
	err := write(t, o, batch)
	le := requireDropped(t, err, 1000, morse.ReasonFieldTypeConflict, bad)
	require.Contains(t, le[0].Error(), "column", "the error names the column: %v", le[0])
	flush(t, o)
	q.WaitCount(t, table, 1+999, waitRows)
	res := q.MustQuery(t, "SELECT count() FROM "+table+" WHERE id = "+itoa(1+bad))
	require.Equal(t, json.Number("0"), res.Dataset[0][0], "the bad line is not stored")
}

func testFiveTables(t *testing.T, q *testserver.QuestDB, p string) {
	o := newOutput(t, q, p)
	tables := make([]string, 5)
	var batch []morse.Metric
	for i := range tables {
		tables[i] = "five_" + p + "_" + itoa(i)
		require.NoError(t, write(t, o, rows(tables[i], 0, 1, now)))
	}
	confirmed(t, o)
	// 200 lines per table, interleaved as an agent's batch would be.
	for k := range 200 {
		for i := range tables {
			batch = append(batch, rows(tables[i], 1+k, 1, now)...)
		}
	}
	// Two bad lines in the fourth table: a string and a float where v is a LONG.
	bad := []int{5*17 + 3, 5*150 + 3}
	batch[bad[0]] = batch[bad[0]].WithField("v", morse.String("x"))
	batch[bad[1]] = batch[bad[1]].WithField("v", morse.Float(1.5))
	requireDropped(t, write(t, o, batch), len(batch), morse.ReasonFieldTypeConflict, bad...)
	flush(t, o)
	for i, table := range tables {
		want := int64(201)
		if i == 3 {
			want = 199
		}
		q.WaitCount(t, table, want, waitRows)
	}
}

func testUnsupported(t *testing.T, q *testserver.QuestDB, p string) {
	table := "unsupported_" + p
	batch := rows(table, 0, 8, now)
	batch[1] = batch[1].WithField("big", morse.Uint(math.MaxInt64+1))
	batch[3] = batch[3].WithField("v", morse.Int(math.MinInt64))
	batch[5] = batch[5].WithTime(time.Unix(-1, 0))
	batch[6] = morse.NewLineMetric(morse.LineText{Text: table + " id=6i,v=18446744073709551615u", Uints: true}, now)
	o := newOutput(t, q, p)
	requireDropped(t, write(t, o, batch), 8, ReasonUnsupportedValue, 1, 3, 5, 6)
	flush(t, o)
	q.WaitCount(t, table, 4, waitRows)

	names := []morse.Metric{
		morse.NewMetric("bad/table", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, now),
		morse.NewMetric("names_"+p, []morse.Tag{{Key: "k8s.io/app", Value: "x"}}, []morse.Field{{Key: "v", Value: morse.Int(1)}}, now),
		morse.NewMetric("names_"+p, nil, []morse.Field{{Key: "usage-idle", Value: morse.Int(1)}}, now),
		morse.NewMetric("names_"+p, []morse.Tag{{Key: "v", Value: "x"}}, []morse.Field{{Key: "v", Value: morse.Int(1)}}, now),
		morse.NewMetric("names_"+p, nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, now),
	}
	o = newOutput(t, q, p)
	requireDropped(t, write(t, o, names), 5, ReasonInvalidName, 0, 1, 2, 3)
	flush(t, o)
	q.WaitCount(t, "names_"+p, 1, waitRows)
}

func itoa(i int) string { return strconv.Itoa(i) }

// testTagValuesExact: QuestDB takes every backslash as escaping the byte after it, where
// InfluxDB takes one only before a comma, space or equals sign. Tag values with
// backslashes, tabs and line breaks are stored exactly as they were.
func testTagValuesExact(t *testing.T, q *testserver.QuestDB, p string) {
	table := "tagvalues_" + p
	values := []string{`C:\Windows\Temp`, `a\\b`, "tab\there", "line\nbreak", "carriage\rreturn", `end\`, `x,y z=w`}
	batch := make([]morse.Metric, len(values))
	for i, v := range values {
		batch[i] = morse.NewMetric(table, []morse.Tag{{Key: "t", Value: v}},
			[]morse.Field{{Key: "i", Value: morse.Int(int64(i))}}, now.Add(time.Duration(i)*time.Second))
	}
	o := newOutput(t, q, p)
	require.NoError(t, write(t, o, batch))
	flush(t, o)
	q.WaitCount(t, table, int64(len(values)), waitRows)
	res := q.MustQuery(t, "SELECT t FROM "+table+" ORDER BY i")
	got := make([]string, len(res.Dataset))
	for i, r := range res.Dataset {
		got[i] = r[0].(string)
	}
	require.Equal(t, values, got)
}
