package influxdb

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
)

const longString = "a string longer than thirty-one bytes, so MessagePack needs str8"

// clientData is written once and queried in every form.
func clientData() []morse.Metric {
	return []morse.Metric{
		point("typed", 1_600_000_000_000_000_001, "#host", "a", "f", 1.5, "i", int64(-3), "s", "hi \"x\"\né", "b", true, "whole", 1.0),
		point("typed", 1_600_000_000_000_000_002, "#host", "a", "f", 2.0, "i", int64(300), "s", longString, "b", false, "whole", 2.0),
		point("typed", 1_600_000_000_000_000_003, "#host", "b", "f", -0.25, "i", int64(9_000_000_000), "whole", 3.0),
		point("typed", 1_600_000_000_000_000_004, "#host", "b", "i", int64(-100_000), "s", ""),
		point("typed", 1_600_000_000_000_000_005, "#host", "b", "f", 1e-300, "b", true),
	}
}

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
	require.NoError(t, connected(t, in.URL(), "q").Write(ctxT(t), clientData()))
	c, err := NewClient(ClientOptions{URL: in.URL(), Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *testserver.Influx, *Client)
	}{
		{"MessagePack rows are typed exactly", testTypedRows},
		{"chunks are merged", testChunksMerged},
		{"a float field of integral values: JSON cannot tell, MessagePack can", testIntegralFloats},
		{"nulls", testNulls},
		{"a failed statement among good ones", testFailedStatement},
		{"a query that does not parse", testParseError},
		{"fixture encoders write what the server writes", testFixtures},
		{"MessagePack equals JSON, rows equal columns", testFormsAgree},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, in, c) })
	}
}

// clientQuery is the query most client tests run.
const clientQuery = "SELECT b, f, host, i, s FROM typed"

func testTypedRows(t *testing.T, in *testserver.Influx, c *Client) {
	resp, err := c.Query(ctxT(t), clientQuery, WithDatabase("q"))
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	require.Equal(t, []Series{{Name: "typed", Columns: []string{"time", "b", "f", "host", "i", "s"}, Values: wantRows}},
		resp.Results[0].Series)
}

func testChunksMerged(t *testing.T, in *testserver.Influx, c *Client) {
	whole, err := c.Query(ctxT(t), clientQuery, WithDatabase("q"))
	require.NoError(t, err)
	chunked, err := c.Query(ctxT(t), clientQuery, WithDatabase("q"), WithChunked(2))
	require.NoError(t, err)
	require.Equal(t, whole, chunked)
}

func testIntegralFloats(t *testing.T, in *testserver.Influx, c *Client) {
	mp, err := c.Query(ctxT(t), "SELECT whole FROM typed", WithDatabase("q"), WithColumnar())
	require.NoError(t, err)
	col := mp.Results[0].Columnar[0].Column("whole")
	require.Equal(t, ColumnFloat, col.Type)
	require.Equal(t, []float64{1, 2, 3}, col.Floats)
	js, err := c.Query(ctxT(t), "SELECT whole FROM typed", WithDatabase("q"), WithColumnar(), WithFormat(FormatJSON))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, js.Results[0].Columnar[0].Column("whole").Ints)
}

func testNulls(t *testing.T, in *testserver.Influx, c *Client) {
	resp, err := c.Query(ctxT(t), clientQuery, WithDatabase("q"), WithColumnar())
	require.NoError(t, err)
	s := resp.Results[0].Columnar[0]
	b := s.Column("b")
	require.Equal(t, ColumnBool, b.Type)
	require.Equal(t, []bool{true, false, false, false, true}, b.Bools)
	require.Equal(t, 2, b.NullCount())
	require.True(t, b.IsNull(2))
	require.Nil(t, b.Value(3))
	require.Equal(t, ts(1_600_000_000_000_000_004), s.TimeAt(3))
}

func testFailedStatement(t *testing.T, in *testserver.Influx, c *Client) {
	resp, err := c.Query(ctxT(t), clientQuery+"; SHOW TAG KEYS ON nope_db", WithDatabase("q"))
	var qe *QueryError
	require.ErrorAs(t, err, &qe)
	require.Equal(t, http.StatusOK, qe.StatusCode)
	require.Equal(t, "database not found: nope_db", qe.Message)
	require.Len(t, resp.Results, 2)
	require.Equal(t, wantRows, resp.Results[0].Series[0].Values)
	require.Equal(t, Result{StatementID: 1, Err: "database not found: nope_db"}, resp.Results[1])
	js, err := c.Query(ctxT(t), clientQuery+"; SHOW TAG KEYS ON nope_db", WithDatabase("q"), WithFormat(FormatJSON))
	require.Error(t, err)
	require.Equal(t, resp, js)
}

func testParseError(t *testing.T, in *testserver.Influx, c *Client) {
	for _, f := range []Format{FormatMsgpack, FormatJSON} {
		_, err := c.Query(ctxT(t), "SELEC * FROM typed", WithDatabase("q"), WithFormat(f))
		var qe *QueryError
		require.ErrorAs(t, err, &qe)
		require.Equal(t, http.StatusBadRequest, qe.StatusCode)
		require.True(t, strings.HasPrefix(qe.Message, "error parsing query: found SELEC, expected SELECT"), qe.Message)
	}
}

func testFixtures(t *testing.T, in *testserver.Influx, c *Client) {
	in.Exec(t, "CREATE DATABASE fx")
	require.Equal(t, 204, in.Write(t, "fx", strings.Join([]string{
		`fx b=true,f=1.5,i=-3i,s="x" 1600000000000000001`,
		`fx b=false,f=-2.25e-07,i=300i,s="` + longString + `" 1600000000000000002`,
		`fx f=1e+21,i=9000000000i 1600000000000000003`,
		`fx i=-200i,s="" 1600000000000000004`,
	}, "\n")+"\n").Status)
	fx := fixtureSeries{Name: "fx", Columns: []string{"time", "b", "f", "i", "s"}, Values: [][]any{
		{ts(1_600_000_000_000_000_001), true, 1.5, int64(-3), "x"},
		{ts(1_600_000_000_000_000_002), false, -2.25e-07, int64(300), longString},
		{ts(1_600_000_000_000_000_003), nil, 1e21, int64(9_000_000_000), nil},
		{ts(1_600_000_000_000_000_004), nil, nil, int64(-200), ""},
	}}
	require.Equal(t, encodeMsgpackAnswer(fx), rawQuery(t, in, "fx", "SELECT * FROM fx", "application/x-msgpack"))
	require.Equal(t, string(encodeJSONAnswer(fx)), string(rawQuery(t, in, "fx", "SELECT * FROM fx", "application/json")))
}

// testFormsAgree queries in every form: MessagePack and JSON give the same Response, and
// columns hold the same values as rows.
func testFormsAgree(t *testing.T, _ *testserver.Influx, c *Client) {
	grouped := clientQuery + " GROUP BY host"
	for _, v := range []struct {
		name, query string
		opts        []QueryOption
	}{
		{"plain", clientQuery, nil},
		{"epoch=ns", clientQuery, []QueryOption{WithEpoch("ns")}},
		{"epoch=ms", clientQuery, []QueryOption{WithEpoch("ms")}},
		{"chunked by 2", clientQuery, []QueryOption{WithChunked(2)}},
		{"chunked by 1, epoch=ns", clientQuery, []QueryOption{WithChunked(1), WithEpoch("ns")}},
		{"GROUP BY host", grouped, nil},
		{"GROUP BY host, chunked", grouped, []QueryOption{WithChunked(1)}},
	} {
		t.Run(v.name, func(t *testing.T) {
			opts := append([]QueryOption{WithDatabase("q")}, v.opts...)
			for _, columnar := range []bool{false, true} {
				o := opts
				if columnar {
					o = append(o, WithColumnar())
				}
				mp, err := c.Query(ctxT(t), v.query, o...)
				require.NoError(t, err)
				js, err := c.Query(ctxT(t), v.query, append(o, WithFormat(FormatJSON))...)
				require.NoError(t, err)
				require.Equal(t, mp, js, "columnar=%v", columnar)
				require.NotZero(t, len(mp.Results[0].Series)+len(mp.Results[0].Columnar))
			}
			rows, err := c.Query(ctxT(t), v.query, opts...)
			require.NoError(t, err)
			cols, err := c.Query(ctxT(t), v.query, append(opts, WithColumnar())...)
			require.NoError(t, err)
			requireSameData(t, rows.Results[0].Series, cols.Results[0].Columnar, epochOf(opts))
		})
	}
}

func epochOf(opts []QueryOption) time.Duration {
	var c queryConfig
	for _, o := range opts {
		o(&c)
	}
	return epochUnits[c.epoch]
}

// requireSameData checks that columns hold exactly the rows' values.
func requireSameData(t *testing.T, rows []Series, cols []ColumnarSeries, epoch time.Duration) {
	t.Helper()
	require.Len(t, cols, len(rows))
	for k, r := range rows {
		c := cols[k]
		require.Equal(t, r.Name, c.Name)
		require.Equal(t, r.Tags, c.Tags)
		require.Equal(t, len(r.Values), c.Len())
		for i, row := range r.Values {
			want, err := timeToNanos(row[0], epoch)
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
