package influxquery

import (
	"bufio"
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func decodeBytes(t *testing.T, body []byte, contentType string, columnar bool) (*Response, error) {
	t.Helper()
	resp := &Response{}
	err := decodeAnswer(bufio.NewReader(bytes.NewReader(body)), contentType, resp, columnar, 0)
	return resp, err
}

// msgpackDoc builds one document by hand, for what InfluxDB rarely sends.
func msgpackDoc(series func(b []byte) []byte, nSeries int) []byte {
	b := mpStr(mpMap(nil, 1), "results")
	b = mpArray(b, 1)
	b = mpStr(mpMap(b, 3), "statement_id")
	b = mpInt(b, 0)
	b = mpStr(b, "messages")
	b = mpArray(b, 1)
	b = mpStr(mpStr(mpStr(mpStr(mpMap(b, 2), "level"), "warning"), "text"), "deprecated")
	b = mpStr(b, "series")
	return series(mpArray(b, nSeries))
}

func TestDecodeMsgpackEdges(t *testing.T) {
	body := msgpackDoc(func(b []byte) []byte {
		b = mpStr(mpMap(b, 2), "columns")
		b = mpArray(b, 3)
		b = mpStr(mpStr(mpStr(b, "time"), "u"), "x")
		b = mpStr(b, "values")
		b = mpArray(b, 4)
		// time, uint64 (0xcf), mixed string
		b = mpValue(mpValue(mpValue(mpArray(b, 3), time.Unix(1, 5)), uint64(math.MaxUint64)), "s")
		// small uint as fixint, an int where a string was, and one value beyond the header
		b = mpValue(mpValue(mpValue(mpValue(mpArray(b, 4), time.Unix(2, 0)), uint64(3)), int64(7)), 1.5)
		// a short row
		b = mpValue(mpArray(b, 1), time.Unix(3, 0))
		// an unknown extension
		b = append(mpValue(mpValue(mpArray(b, 3), time.Unix(4, 0)), uint64(9)), 0xd4, 0x01, 0xab)
		return b
	}, 1)

	rows, err := decodeBytes(t, body, "application/x-msgpack", false)
	require.NoError(t, err)
	res := rows.Results[0]
	require.Equal(t, []Message{{Level: "warning", Text: "deprecated"}}, res.Messages)
	require.Equal(t, [][]any{
		{time.Unix(1, 5).UTC(), uint64(math.MaxUint64), "s"},
		{time.Unix(2, 0).UTC(), int64(3), int64(7), 1.5},
		{time.Unix(3, 0).UTC()},
		{time.Unix(4, 0).UTC(), int64(9), []byte{0xab}}, // a small uint is a plain fixint
	}, res.Series[0].Values)

	cols, err := decodeBytes(t, body, "", true) // sniffed as MessagePack
	require.NoError(t, err)
	s := cols.Results[0].Columnar[0]
	require.Equal(t, 4, s.Len())
	require.Equal(t, []int64{1_000_000_005, 2e9, 3e9, 4e9}, s.Time)
	u := s.Column("u")
	require.Equal(t, ColumnUint, u.Type)
	require.Equal(t, []uint64{math.MaxUint64, 3, 0, 9}, u.Uints)
	require.True(t, u.IsNull(2))
	x := s.Column("x")
	require.Equal(t, ColumnMixed, x.Type)
	require.Equal(t, []any{"s", int64(7), nil, []byte{0xab}}, x.Mixed)
	require.Equal(t, "", s.Columns[2].Name, "a value beyond the header gets a column of its own")
	require.Equal(t, []any{nil, 1.5, nil, nil}, []any{s.Columns[2].Value(0), s.Columns[2].Value(1), s.Columns[2].Value(2), s.Columns[2].Value(3)})
}

func TestDecodeRequestError(t *testing.T) {
	body := mpStr(mpStr(mpMap(nil, 1), "error"), "error parsing query: x")
	resp, err := decodeBytes(t, body, "application/x-msgpack", false)
	require.NoError(t, err)
	require.EqualError(t, resp.Error(), "error parsing query: x")

	resp, err = decodeBytes(t, []byte(`{"error":"error parsing query: y"}`+"\n"), "", false)
	require.NoError(t, err)
	require.EqualError(t, resp.Error(), "error parsing query: y")
}

func TestDecodeGarbage(t *testing.T) {
	for _, tc := range []struct{ body, ct string }{
		{"<html>bad gateway</html>", "text/html"},
		{"", ""},
		{`{"results":[{"statement_id":0,"series":[{"values":[[1,{}]]}]}]}`, "application/json"},
		{"\x81\xa7results\x91\x82", "application/x-msgpack"}, // truncated
	} {
		_, err := decodeBytes(t, []byte(tc.body), tc.ct, false)
		require.Error(t, err, "%q", tc.body)
	}
}

func TestDecodeJSONNumbers(t *testing.T) {
	body := `{"results":[{"statement_id":0,"series":[{"name":"m","columns":["time","big","neg","f","mixed"],` +
		`"values":[["2020-09-13T12:26:40.000000001Z",18446744073709551615,-9223372036854775808,1,2],` +
		`["2020-09-13T12:26:40Z",1,2,2.5,"x"]]}]}]}` + "\n"
	resp, err := decodeBytes(t, []byte(body), "application/json; charset=utf-8", false)
	require.NoError(t, err)
	require.Equal(t, [][]any{
		{time.Unix(1_600_000_000, 1).UTC(), uint64(math.MaxUint64), int64(math.MinInt64), 1.0, int64(2)},
		{time.Unix(1_600_000_000, 0).UTC(), int64(1), int64(2), 2.5, "x"},
	}, resp.Results[0].Series[0].Values)
}

func TestDecodeChunkedMsgpack(t *testing.T) {
	// Three documents of one statement; the first two say partial, as InfluxDB's do.
	chunk := func(rows [][]any, partial bool) []byte {
		b := mpStr(mpMap(nil, 1), "results")
		b = mpArray(b, 1)
		n := 2
		if partial {
			n++
		}
		b = mpStr(mpMap(b, n), "statement_id")
		b = mpStr(mpInt(b, 0), "series")
		b = mpArray(b, 1)
		sn := 3
		if partial {
			sn++
		}
		b = mpStr(mpStr(mpMap(b, sn), "name"), "m")
		b = mpStr(mpStr(mpStr(mpArray(mpStr(b, "columns"), 2), "time"), "v"), "values")
		b = mpArray(b, len(rows))
		for _, r := range rows {
			b = mpValue(mpValue(mpArray(b, 2), r[0]), r[1])
		}
		if partial {
			b = append(mpStr(b, "partial"), 0xc3)
			b = append(mpStr(b, "partial"), 0xc3)
		}
		return b
	}
	var body []byte
	body = append(body, chunk([][]any{{time.Unix(1, 0), 1.5}}, true)...)
	body = append(body, chunk([][]any{{time.Unix(2, 0), 2.5}}, true)...)
	body = append(body, chunk([][]any{{time.Unix(3, 0), nil}}, false)...)
	resp, err := decodeBytes(t, body, "application/x-msgpack", true)
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	require.False(t, resp.Results[0].Partial)
	s := resp.Results[0].Columnar
	require.Len(t, s, 1)
	require.False(t, s[0].Partial)
	require.Equal(t, []int64{1e9, 2e9, 3e9}, s[0].Time)
	require.Equal(t, []float64{1.5, 2.5, 0}, s[0].Column("v").Floats)
	require.True(t, s[0].Column("v").IsNull(2))
}
