package influxquery_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

const longString = "a string longer than thirty-one bytes, so MessagePack needs str8"

// clientLines is written once and queried in every form. The string of the first line holds
// a newline, which InfluxDB 1.x takes raw inside quotes.
const clientLines = "typed,host=a b=true,f=1.5,i=-3i,s=\"hi \\\"x\\\"\né\",whole=1 1600000000000000001\n" +
	"typed,host=a b=false,f=2,i=300i,s=\"" + longString + "\",whole=2 1600000000000000002\n" +
	"typed,host=b f=-0.25,i=9000000000i,whole=3 1600000000000000003\n" +
	"typed,host=b i=-100000i,s=\"\" 1600000000000000004\n" +
	"typed,host=b f=1e-300,b=true 1600000000000000005\n"

func ts(n int64) time.Time { return time.Unix(0, n).UTC() }

// wantRows is what SELECT time, b, f, host, i, s FROM typed answers, typed exactly.
var wantRows = [][]any{
	{ts(1_600_000_000_000_000_001), true, 1.5, "a", int64(-3), "hi \"x\"\né"},
	{ts(1_600_000_000_000_000_002), false, 2.0, "a", int64(300), longString},
	{ts(1_600_000_000_000_000_003), nil, -0.25, "b", int64(9_000_000_000), nil},
	{ts(1_600_000_000_000_000_004), nil, nil, "b", int64(-100_000), ""},
	{ts(1_600_000_000_000_000_005), true, 1e-300, "b", nil, nil},
}

func TestQueryClient(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE q")
	require.Equal(t, 204, in.Write(t, "q", clientLines).Status)
	c, err := influxquery.NewClient(influxquery.ClientOptions{URL: in.URL(), Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *testserver.Influx, *influxquery.Client)
	}{
		{"MessagePack rows are typed exactly", testTypedRows},
		{"chunks are merged", testChunksMerged},
		{"a float field of integral values: JSON cannot tell, MessagePack can", testIntegralFloats},
		{"nulls", testNulls},
		{"a failed statement among good ones", testFailedStatement},
		{"a query that does not parse", testParseError},
		{"fixture encoders write what the server writes", testFixtures},
		{"MessagePack equals JSON, rows equal columns", testFormsAgree},
		{"the package example prints what it should", testExample},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, in, c) })
	}
}

// clientQuery is the query most client tests run.
const clientQuery = "SELECT b, f, host, i, s FROM typed"

func testTypedRows(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	resp, err := c.Query(testutil.Context(t), clientQuery, influxquery.WithDatabase("q"))
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	require.Equal(t, []influxquery.Series{{Name: "typed", Columns: []string{"time", "b", "f", "host", "i", "s"}, Values: wantRows}},
		resp.Results[0].Series)
}

func testChunksMerged(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	whole, err := c.Query(testutil.Context(t), clientQuery, influxquery.WithDatabase("q"))
	require.NoError(t, err)
	chunked, err := c.Query(testutil.Context(t), clientQuery, influxquery.WithDatabase("q"), influxquery.WithChunked(2))
	require.NoError(t, err)
	require.Equal(t, whole, chunked)
}

func testIntegralFloats(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	mp, err := c.Query(testutil.Context(t), "SELECT whole FROM typed", influxquery.WithDatabase("q"), influxquery.WithColumnar())
	require.NoError(t, err)
	col := mp.Results[0].Columnar[0].Column("whole")
	require.Equal(t, influxquery.ColumnFloat, col.Type)
	require.Equal(t, []float64{1, 2, 3}, col.Floats)
	js, err := c.Query(testutil.Context(t), "SELECT whole FROM typed", influxquery.WithDatabase("q"), influxquery.WithColumnar(), influxquery.WithFormat(influxquery.FormatJSON))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, js.Results[0].Columnar[0].Column("whole").Ints)
}

func testNulls(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	resp, err := c.Query(testutil.Context(t), clientQuery, influxquery.WithDatabase("q"), influxquery.WithColumnar())
	require.NoError(t, err)
	s := resp.Results[0].Columnar[0]
	b := s.Column("b")
	require.Equal(t, influxquery.ColumnBool, b.Type)
	require.Equal(t, []bool{true, false, false, false, true}, b.Bools)
	require.Equal(t, 2, b.NullCount())
	require.True(t, b.IsNull(2))
	require.Nil(t, b.Value(3))
	require.Equal(t, ts(1_600_000_000_000_000_004), s.TimeAt(3))
}

func testFailedStatement(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	resp, err := c.Query(testutil.Context(t), clientQuery+"; SHOW TAG KEYS ON nope_db", influxquery.WithDatabase("q"))
	var qe *influxquery.QueryError
	require.ErrorAs(t, err, &qe)
	require.Equal(t, http.StatusOK, qe.StatusCode)
	require.Equal(t, "database not found: nope_db", qe.Message)
	require.Len(t, resp.Results, 2)
	require.Equal(t, wantRows, resp.Results[0].Series[0].Values)
	require.Equal(t, influxquery.Result{StatementID: 1, Err: "database not found: nope_db"}, resp.Results[1])
	js, err := c.Query(testutil.Context(t), clientQuery+"; SHOW TAG KEYS ON nope_db", influxquery.WithDatabase("q"), influxquery.WithFormat(influxquery.FormatJSON))
	require.Error(t, err)
	require.Equal(t, resp, js)
}

func testParseError(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	for _, f := range []influxquery.Format{influxquery.FormatMsgpack, influxquery.FormatJSON} {
		_, err := c.Query(testutil.Context(t), "SELEC * FROM typed", influxquery.WithDatabase("q"), influxquery.WithFormat(f))
		var qe *influxquery.QueryError
		require.ErrorAs(t, err, &qe)
		require.Equal(t, http.StatusBadRequest, qe.StatusCode)
		require.True(t, strings.HasPrefix(qe.Message, "error parsing query: found SELEC, expected SELECT"), qe.Message)
	}
}

func testFixtures(t *testing.T, in *testserver.Influx, c *influxquery.Client) {
	in.Exec(t, "CREATE DATABASE fx")
	require.Equal(t, 204, in.Write(t, "fx", strings.Join([]string{
		`fx b=true,f=1.5,i=-3i,s="x" 1600000000000000001`,
		`fx b=false,f=-2.25e-07,i=300i,s="` + longString + `" 1600000000000000002`,
		`fx f=1e+21,i=9000000000i 1600000000000000003`,
		`fx i=-200i,s="" 1600000000000000004`,
	}, "\n")+"\n").Status)
	fx := influxquery.FixtureSeries{Name: "fx", Columns: []string{"time", "b", "f", "i", "s"}, Values: [][]any{
		{ts(1_600_000_000_000_000_001), true, 1.5, int64(-3), "x"},
		{ts(1_600_000_000_000_000_002), false, -2.25e-07, int64(300), longString},
		{ts(1_600_000_000_000_000_003), nil, 1e21, int64(9_000_000_000), nil},
		{ts(1_600_000_000_000_000_004), nil, nil, int64(-200), ""},
	}}
	require.Equal(t, influxquery.EncodeMsgpackAnswer(fx), rawQuery(t, in, "fx", "SELECT * FROM fx", "application/x-msgpack"))
	require.Equal(t, string(influxquery.EncodeJSONAnswer(fx)), string(rawQuery(t, in, "fx", "SELECT * FROM fx", "application/json")))
}

// testFormsAgree queries in every form: MessagePack and JSON give the same Response, and
// columns hold the same values as rows.
func testFormsAgree(t *testing.T, _ *testserver.Influx, c *influxquery.Client) {
	grouped := clientQuery + " GROUP BY host"
	for _, v := range []struct {
		name, query string
		opts        []influxquery.QueryOption
	}{
		{"plain", clientQuery, nil},
		{"epoch=ns", clientQuery, []influxquery.QueryOption{influxquery.WithEpoch("ns")}},
		{"epoch=ms", clientQuery, []influxquery.QueryOption{influxquery.WithEpoch("ms")}},
		{"chunked by 2", clientQuery, []influxquery.QueryOption{influxquery.WithChunked(2)}},
		{"chunked by 1, epoch=ns", clientQuery, []influxquery.QueryOption{influxquery.WithChunked(1), influxquery.WithEpoch("ns")}},
		{"GROUP BY host", grouped, nil},
		{"GROUP BY host, chunked", grouped, []influxquery.QueryOption{influxquery.WithChunked(1)}},
	} {
		t.Run(v.name, func(t *testing.T) {
			opts := append([]influxquery.QueryOption{influxquery.WithDatabase("q")}, v.opts...)
			for _, columnar := range []bool{false, true} {
				o := opts
				if columnar {
					o = append(o, influxquery.WithColumnar())
				}
				mp, err := c.Query(testutil.Context(t), v.query, o...)
				require.NoError(t, err)
				js, err := c.Query(testutil.Context(t), v.query, append(o, influxquery.WithFormat(influxquery.FormatJSON))...)
				require.NoError(t, err)
				require.Equal(t, mp, js, "columnar=%v", columnar)
				require.NotZero(t, len(mp.Results[0].Series)+len(mp.Results[0].Columnar))
			}
			rows, err := c.Query(testutil.Context(t), v.query, opts...)
			require.NoError(t, err)
			cols, err := c.Query(testutil.Context(t), v.query, append(opts, influxquery.WithColumnar())...)
			require.NoError(t, err)
			requireSameData(t, rows.Results[0].Series, cols.Results[0].Columnar, influxquery.EpochOf(opts))
		})
	}
}

// requireSameData checks that columns hold exactly the rows' values.
func requireSameData(t *testing.T, rows []influxquery.Series, cols []influxquery.ColumnarSeries, epoch time.Duration) {
	t.Helper()
	require.Len(t, cols, len(rows))
	for k, r := range rows {
		c := cols[k]
		require.Equal(t, r.Name, c.Name)
		require.Equal(t, r.Tags, c.Tags)
		require.Equal(t, len(r.Values), c.Len())
		for i, row := range r.Values {
			want, err := influxquery.TimeToNanos(row[0], epoch)
			require.NoError(t, err)
			require.Equal(t, want, c.Time[i], "time of row %d", i)
			for j, v := range row[1:] {
				require.Equal(t, r.Columns[j+1], c.Columns[j].Name)
				require.Equal(t, v, c.Columns[j].Value(i), "row %d column %s", i, r.Columns[j+1])
			}
		}
	}
}

// rawQuery returns the body of a query answer as the server sends it.
func rawQuery(t *testing.T, in *testserver.Influx, db, q, accept string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, in.URL()+"/query?"+url.Values{"db": {db}, "q": {q}}.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, accept, resp.Header.Get("Content-Type"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// exampleLines are what the package example reads: two hosts' cpu, ten seconds apart.
const exampleLines = `cpu,cpu=cpu-total,host=a usage_idle=96.5,usage_user=2.5 1767225600000000000
cpu,cpu=cpu-total,host=a usage_idle=97.25,usage_user=1.75 1767225610000000000
cpu,cpu=cpu-total,host=b usage_idle=90.5,usage_user=8 1767225600000000000
cpu,cpu=cpu-total,host=b usage_idle=88,usage_user=10 1767225610000000000
`

// testExample runs Example against the real server and compares what it prints with
// testdata/example.golden. Example is compiled by go test but not run, for it has no
// Output comment: it needs a server that only a test can start.
func testExample(t *testing.T, in *testserver.Influx, _ *influxquery.Client) {
	in.Exec(t, "CREATE DATABASE telegraf")
	require.Equal(t, 204, in.Write(t, "telegraf", exampleLines).Status)
	defer func(u string) { influxURL = u }(influxURL)
	influxURL = in.URL()
	want, err := os.ReadFile("testdata/example.golden")
	require.NoError(t, err)
	require.Equal(t, string(want), stdoutOf(t, Example))
}

// stdoutOf runs fn and returns what it printed to os.Stdout.
func stdoutOf(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	printed := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		printed <- b
	}()
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	fn()
	require.NoError(t, w.Close())
	out := <-printed
	require.NoError(t, r.Close())
	return string(out)
}
