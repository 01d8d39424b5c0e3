package influxquery

import (
	"errors"
	"maps"
	"slices"
	"strings"
)

// Response is InfluxDB's answer to a query: one Result per statement. A chunked answer,
// which InfluxDB sends as several documents, is merged back into one Response.
type Response struct {
	Results []Result
	// Err is an error about the request as a whole, such as a query that does not parse.
	Err string
}

// Result is the answer to one statement. Exactly one of Series and Columnar is filled,
// depending on WithColumnar.
type Result struct {
	StatementID int
	Series      []Series         // row by row (the default)
	Columnar    []ColumnarSeries // column by column (WithColumnar)
	Messages    []Message
	Partial     bool   // more of this result follows (only seen while decoding chunks)
	Err         string // the statement failed
}

// Message is an informational message of a result, such as a deprecation warning.
type Message struct {
	Level string `json:"level" msgpack:"level"`
	Text  string `json:"text" msgpack:"text"`
}

// Series is one series of a result, row by row. Values hold int64, uint64, float64, string,
// bool, nil and, for the time column without an epoch, time.Time (UTC); with an epoch the
// time is an int64 in that unit, as the server sends it. An unsigned value below 128 arrives
// as int64, because MessagePack writes it as a plain small integer (a column of
// ColumnarSeries keeps such a column unsigned).
type Series struct {
	Name    string
	Tags    map[string]string
	Columns []string
	Values  [][]any
	Partial bool
}

// Error returns the first error of the response: the request's or a statement's.
func (r *Response) Error() error {
	if r == nil {
		return nil
	}
	if r.Err != "" {
		return errors.New(r.Err)
	}
	for _, res := range r.Results {
		if res.Err != "" {
			return errors.New(res.Err)
		}
	}
	return nil
}

// result returns the result that a document's result with this statement id continues:
// the last one, when it has the same id and said that more was to come. Otherwise it starts
// a new one.
func (r *Response) result(id int) *Result {
	if n := len(r.Results); n > 0 {
		last := &r.Results[n-1]
		if last.StatementID == id && last.Partial && last.Err == "" {
			return last
		}
	}
	r.Results = append(r.Results, Result{StatementID: id})
	return &r.Results[len(r.Results)-1]
}

// seriesHeader is what precedes a series' values.
type seriesHeader struct {
	name    string
	tags    map[string]string
	columns []string
}

func (h *seriesHeader) continues(name string, tags map[string]string, columns []string, partial bool) bool {
	return partial && name == h.name && maps.Equal(tags, h.tags) && slices.Equal(columns, h.columns)
}

// rowTarget returns the series that rows with this header go to: the last series of res when
// it continues, else a new one.
func (res *Result) rowTarget(h seriesHeader) *Series {
	if n := len(res.Series); n > 0 {
		s := &res.Series[n-1]
		if h.continues(s.Name, s.Tags, s.Columns, s.Partial) {
			return s
		}
	}
	res.Series = append(res.Series, Series{Name: h.name, Tags: h.tags, Columns: h.columns})
	return &res.Series[len(res.Series)-1]
}

// columnTarget is rowTarget for columnar results.
func (res *Result) columnTarget(h seriesHeader) *ColumnarSeries {
	if n := len(res.Columnar); n > 0 {
		s := &res.Columnar[n-1]
		if h.continues(s.Name, s.Tags, s.columnNames(), s.Partial) {
			return s
		}
	}
	res.Columnar = append(res.Columnar, newColumnarSeries(h))
	return &res.Columnar[len(res.Columnar)-1]
}

// QueryError is a query that failed: the server refused the request (StatusCode is not
// 200) or a statement failed (StatusCode is 200, and the Response says which).
type QueryError struct {
	StatusCode int
	Message    string
}

// Error is the server's message.
func (e *QueryError) Error() string {
	return "influxdb query: " + strings.TrimSpace(e.Message)
}
