package influxquery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The JSON form of an answer, as InfluxDB writes it.
type jsonResponse struct {
	Results []jsonResult `json:"results"`
	Err     string       `json:"error"`
}

type jsonResult struct {
	StatementID int          `json:"statement_id"`
	Series      []jsonSeries `json:"series"`
	Messages    []Message    `json:"messages"`
	Partial     bool         `json:"partial"`
	Err         string       `json:"error"`
}

type jsonSeries struct {
	Name    string            `json:"name"`
	Tags    map[string]string `json:"tags"`
	Columns []string          `json:"columns"`
	Values  [][]any           `json:"values"`
	Partial bool              `json:"partial"`
}

// decodeJSON reads every document of a JSON answer (several when chunked) into resp.
//
// JSON has one kind of number, so InfluxDB writes the float 2.0 as 2. Numbers are read with
// UseNumber, so that integers stay exact int64 (or uint64); a column in which any number is
// written as a float is then made a float column throughout. A float column whose values are
// all integral still reads as integers: MessagePack, the default, keeps the types exactly.
func decodeJSON(r io.Reader, resp *Response, columnar bool, epoch time.Duration) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	for docs := 0; ; docs++ {
		var doc jsonResponse
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				if docs > 1 && !columnar {
					promoteMergedRows(resp)
				}
				return nil
			}
			return fmt.Errorf("influxdb: JSON answer: %w", err)
		}
		if doc.Err != "" {
			resp.Err = doc.Err
		}
		for i := range doc.Results {
			if err := mergeJSONResult(resp, &doc.Results[i], columnar, epoch); err != nil {
				return fmt.Errorf("influxdb: JSON answer: %w", err)
			}
		}
	}
}

func mergeJSONResult(resp *Response, jr *jsonResult, columnar bool, epoch time.Duration) error {
	res := resp.result(jr.StatementID)
	res.Partial, res.Err = jr.Partial, jr.Err
	res.Messages = append(res.Messages, jr.Messages...)
	for i := range jr.Series {
		js := &jr.Series[i]
		if err := convertJSONValues(js); err != nil {
			return err
		}
		h := seriesHeader{name: js.Name, tags: js.Tags, columns: js.Columns}
		if !columnar {
			s := res.rowTarget(h)
			s.Values = append(s.Values, js.Values...)
			s.Partial = js.Partial
			continue
		}
		s := res.columnTarget(h)
		if err := pivot(s, js.Values, epoch); err != nil {
			return err
		}
		s.Partial = js.Partial
	}
	return nil
}

// convertJSONValues replaces json.Number by int64, uint64 or float64, column by column, and
// the RFC 3339 strings of the time column by time.Time.
func convertJSONValues(s *jsonSeries) error {
	timeCol := len(s.Columns) > 0 && s.Columns[0] == "time"
	// Row by row, twice: which columns hold a float, then the conversion.
	var isFloat []bool
	for _, row := range s.Values {
		for len(isFloat) < len(row) {
			isFloat = append(isFloat, false)
		}
		for j, v := range row {
			if n, ok := v.(json.Number); ok && !isFloat[j] && strings.ContainsAny(string(n), ".eE") {
				isFloat[j] = true
			}
		}
	}
	for _, row := range s.Values {
		for j, v := range row {
			c, err := convertJSON(v, isFloat[j], timeCol && j == 0)
			if err != nil {
				return fmt.Errorf("series %q column %d: %w", s.Name, j, err)
			}
			row[j] = c
		}
	}
	return nil
}

func convertJSON(v any, isFloat, isTime bool) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if isFloat {
			return strconv.ParseFloat(string(x), 64)
		}
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u, nil
		}
		return strconv.ParseFloat(string(x), 64)
	case string:
		if isTime {
			return time.Parse(time.RFC3339Nano, x)
		}
	case []any, map[string]any:
		return nil, fmt.Errorf("unexpected %T value", v)
	}
	return v, nil
}

// promoteMergedRows makes float columns of the integers of a column that also holds floats.
// Each chunk of a chunked answer is converted alone, and a chunk in which a float field held
// only integral values read them as integers. (Columns promote themselves as they grow.)
func promoteMergedRows(resp *Response) {
	for i := range resp.Results {
		for k := range resp.Results[i].Series {
			s := &resp.Results[i].Series[k]
			for j := range s.Columns {
				promoteColumn(s.Values, j)
			}
		}
	}
}

func promoteColumn(rows [][]any, j int) {
	hasFloat := false
	for _, row := range rows {
		if j < len(row) {
			if _, ok := row[j].(float64); ok {
				hasFloat = true
				break
			}
		}
	}
	if !hasFloat {
		return
	}
	for _, row := range rows {
		if j < len(row) {
			if v, ok := row[j].(int64); ok {
				row[j] = float64(v)
			}
		}
	}
}

// pivot appends rows of converted values to columns.
func pivot(s *ColumnarSeries, rows [][]any, epoch time.Duration) error {
	s.reserve(len(rows))
	off := 0
	if s.hasTime {
		off = 1
	}
	for _, row := range rows {
		for j, v := range row {
			if j < off {
				t, err := timeToNanos(v, epoch)
				if err != nil {
					return err
				}
				s.Time = append(s.Time, t)
				continue
			}
			s.column(j - off).AppendAny(v)
		}
		if len(row) < off {
			s.Time = append(s.Time, 0)
		}
		s.endRow()
	}
	return nil
}
