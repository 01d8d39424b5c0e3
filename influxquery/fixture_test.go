package influxquery

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
)

// fixtureSeries is one series of a query answer built in a test.
type fixtureSeries struct {
	Name    string            `json:"name,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Columns []string          `json:"columns"`
	Values  [][]any           `json:"values"`
}

// encodeMsgpackAnswer encodes one statement's result exactly as InfluxDB 1.6's msgpack
// formatter (tinylib/msgp) does: the smallest encoding of every integer and length, float64
// for floats, and time.Time as extension 5. TestFixturesMatchTheServer checks it
// byte for byte against a real server.
func encodeMsgpackAnswer(series ...fixtureSeries) []byte {
	b := mpMap(nil, 1)
	b = mpStr(b, "results")
	b = mpArray(b, 1)
	b = mpMap(b, 2)
	b = mpStr(b, "statement_id")
	b = mpInt(b, 0)
	b = mpStr(b, "series")
	b = mpArray(b, len(series))
	for _, s := range series {
		n := 2
		if s.Name != "" {
			n++
		}
		if len(s.Tags) > 0 {
			n++
		}
		b = mpMap(b, n)
		if s.Name != "" {
			b = mpStr(mpStr(b, "name"), s.Name)
		}
		if len(s.Tags) > 0 {
			b = mpMap(mpStr(b, "tags"), len(s.Tags))
			for _, k := range slices.Sorted(mapsKeys(s.Tags)) {
				b = mpStr(mpStr(b, k), s.Tags[k])
			}
		}
		b = mpArray(mpStr(b, "columns"), len(s.Columns))
		for _, c := range s.Columns {
			b = mpStr(b, c)
		}
		b = mpArray(mpStr(b, "values"), len(s.Values))
		for _, row := range s.Values {
			b = mpArray(b, len(row))
			for _, v := range row {
				b = mpValue(b, v)
			}
		}
	}
	return b
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func mpValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0)
	case bool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(x))
	case int64:
		return mpInt(b, x)
	case uint64:
		return mpUint(b, x)
	case string:
		return mpStr(b, x)
	case time.Time:
		b = append(b, 0xc7, 12, 5)
		b = binary.BigEndian.AppendUint64(b, uint64(x.Unix()))
		return binary.BigEndian.AppendUint32(b, uint32(x.Nanosecond()))
	}
	panic("mpValue: unsupported type")
}

func mpInt(b []byte, i int64) []byte {
	switch {
	case i >= 0 && i <= math.MaxInt8, i < 0 && i >= -32:
		return append(b, byte(i))
	case i >= 0 && i <= math.MaxInt16, i < 0 && i >= math.MinInt16 && i < math.MinInt8:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(i))
	case i < 0 && i >= math.MinInt8:
		return append(b, 0xd0, byte(i))
	case i >= math.MinInt32 && i <= math.MaxInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(i))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(i))
}

func mpUint(b []byte, u uint64) []byte {
	switch {
	case u <= math.MaxInt8:
		return append(b, byte(u))
	case u <= math.MaxUint8:
		return append(b, 0xcc, byte(u))
	case u <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
	case u <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
}

func mpStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n <= 31:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func mpArray(b []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func mpMap(b []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

// encodeJSONAnswer encodes one statement's result as InfluxDB's JSON formatter does:
// encoding/json, times as RFC 3339 strings, and a newline.
func encodeJSONAnswer(series ...fixtureSeries) []byte {
	type result struct {
		StatementID int             `json:"statement_id"`
		Series      []fixtureSeries `json:"series,omitempty"`
	}
	b, err := json.Marshal(struct {
		Results []result `json:"results"`
	}{[]result{{Series: series}}})
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// benchSeries is a series of n points with InfluxDB's column order (time, then fields in
// name order): a bool, a float, an integer and a string field, every 10th string null.
func benchSeries(n int) fixtureSeries {
	s := fixtureSeries{Name: "bench", Columns: []string{"time", "b", "f", "i", "s"}, Values: make([][]any, n)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := range n {
		var str any = "host-" + strconv.Itoa(k%100)
		if k%10 == 9 {
			str = nil
		}
		s.Values[k] = []any{t0.Add(time.Duration(k) * time.Millisecond), k%2 == 0, float64(k) * 0.25, int64(k*7 - 300), str}
	}
	return s
}
