package influxquery

import (
	"math"
	"math/bits"
	"strconv"
	"time"
)

// ColumnType is the type of the values of a column.
type ColumnType uint8

// The column types. A column takes the type of its first value that is not null; an integer
// column that meets a float becomes a float column, and a column whose values have
// incompatible types keeps them in Mixed.
const (
	ColumnNull   ColumnType = iota // only nulls so far
	ColumnFloat                    // Floats
	ColumnInt                      // Ints
	ColumnUint                     // Uints
	ColumnString                   // Strings
	ColumnBool                     // Bools
	ColumnMixed                    // Mixed, values of several types
)

var columnTypeNames = [...]string{
	ColumnNull: "null", ColumnFloat: "float", ColumnInt: "int", ColumnUint: "uint",
	ColumnString: "string", ColumnBool: "bool", ColumnMixed: "mixed",
}

// String names the type, as a log line or a test failure should show it.
func (t ColumnType) String() string {
	if int(t) < len(columnTypeNames) {
		return columnTypeNames[t]
	}
	return "ColumnType(" + strconv.Itoa(int(t)) + ")"
}

// ColumnarSeries is one series of a result, column by column: each column is one typed
// slice, with a bitmap of nulls, rather than a slice of boxed values per row.
type ColumnarSeries struct {
	Name string
	Tags map[string]string
	// Time is the time column, in nanoseconds since the Unix epoch, when the first column is
	// named "time". An integer time (WithEpoch) is converted to nanoseconds.
	Time []int64
	// Columns are the other columns, in the server's order.
	Columns []Column
	Partial bool

	hasTime bool
	n       int // rows
}

func newColumnarSeries(h seriesHeader) ColumnarSeries {
	s := ColumnarSeries{Name: h.name, Tags: h.tags}
	cols := h.columns
	if len(cols) > 0 && cols[0] == "time" {
		s.hasTime = true
		cols = cols[1:]
	}
	s.Columns = make([]Column, len(cols))
	for i, name := range cols {
		s.Columns[i].Name = name
	}
	return s
}

// Len is the number of rows.
func (s *ColumnarSeries) Len() int { return s.n }

// HasTime reports whether the series has a time column (Time).
func (s *ColumnarSeries) HasTime() bool { return s.hasTime }

// TimeAt returns the time of row i, in UTC.
func (s *ColumnarSeries) TimeAt(i int) time.Time { return time.Unix(0, s.Time[i]).UTC() }

// Column returns the column of that name, or nil.
func (s *ColumnarSeries) Column(name string) *Column {
	for i := range s.Columns {
		if s.Columns[i].Name == name {
			return &s.Columns[i]
		}
	}
	return nil
}

// columnNames lists the column names as the server sent them, time included.
func (s *ColumnarSeries) columnNames() []string {
	names := make([]string, 0, len(s.Columns)+1)
	if s.hasTime {
		names = append(names, "time")
	}
	for i := range s.Columns {
		names = append(names, s.Columns[i].Name)
	}
	return names
}

// reserve makes room for n more rows.
func (s *ColumnarSeries) reserve(n int) {
	if s.hasTime && cap(s.Time)-len(s.Time) < n {
		t := make([]int64, len(s.Time), len(s.Time)+n)
		copy(t, s.Time)
		s.Time = t
	}
	for i := range s.Columns {
		s.Columns[i].reserve(n)
	}
}

// endRow pads the columns that a short row did not reach with nulls.
func (s *ColumnarSeries) endRow() {
	s.n++
	for i := range s.Columns {
		if s.Columns[i].n < s.n {
			s.Columns[i].AppendNull()
		}
	}
}

// column returns column j of the current row, adding unnamed columns for a row longer than
// the header, so that no value is lost.
func (s *ColumnarSeries) column(j int) *Column {
	for j >= len(s.Columns) {
		c := Column{}
		for range s.n {
			c.AppendNull()
		}
		s.Columns = append(s.Columns, c)
	}
	return &s.Columns[j]
}

// Column is one typed column. The slice that Type names holds one value per row, with the
// zero value where the row is null.
type Column struct {
	Name    string
	Type    ColumnType
	Floats  []float64
	Ints    []int64
	Uints   []uint64
	Strings []string
	Bools   []bool
	Mixed   []any

	nulls []uint64 // bit i is set when row i is null; nil when no row is
	n     int
	hint  int // rows expected, for the first allocation
}

// Len is the number of rows.
func (c *Column) Len() int { return c.n }

// IsNull reports whether row i has no value.
func (c *Column) IsNull(i int) bool {
	w := i / 64
	return w < len(c.nulls) && c.nulls[w]&(1<<(uint(i)%64)) != 0
}

// NullCount is the number of null rows.
func (c *Column) NullCount() int {
	n := 0
	for _, w := range c.nulls {
		n += bits.OnesCount64(w)
	}
	return n
}

// Value returns row i as int64, uint64, float64, string, bool or nil.
func (c *Column) Value(i int) any {
	if c.IsNull(i) {
		return nil
	}
	switch c.Type {
	case ColumnFloat:
		return c.Floats[i]
	case ColumnInt:
		return c.Ints[i]
	case ColumnUint:
		return c.Uints[i]
	case ColumnString:
		return c.Strings[i]
	case ColumnBool:
		return c.Bools[i]
	case ColumnMixed:
		return c.Mixed[i]
	}
	return nil
}

func (c *Column) reserve(n int) {
	c.hint = n
	switch c.Type {
	case ColumnFloat:
		c.Floats = grow(c.Floats, n)
	case ColumnInt:
		c.Ints = grow(c.Ints, n)
	case ColumnUint:
		c.Uints = grow(c.Uints, n)
	case ColumnString:
		c.Strings = grow(c.Strings, n)
	case ColumnBool:
		c.Bools = grow(c.Bools, n)
	case ColumnMixed:
		c.Mixed = grow(c.Mixed, n)
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	g := make([]T, len(s), len(s)+n)
	copy(g, s)
	return g
}

// typed makes a slice for a column that gets its first value, with zeros for the nulls
// before it.
func typed[T any](c *Column) []T { return make([]T, c.n, c.n+max(c.hint, 1)) }

// AppendNull appends a null.
func (c *Column) AppendNull() {
	w := c.n / 64
	for len(c.nulls) <= w {
		c.nulls = append(c.nulls, 0)
	}
	c.nulls[w] |= 1 << (uint(c.n) % 64)
	switch c.Type {
	case ColumnFloat:
		c.Floats = append(c.Floats, 0)
	case ColumnInt:
		c.Ints = append(c.Ints, 0)
	case ColumnUint:
		c.Uints = append(c.Uints, 0)
	case ColumnString:
		c.Strings = append(c.Strings, "")
	case ColumnBool:
		c.Bools = append(c.Bools, false)
	case ColumnMixed:
		c.Mixed = append(c.Mixed, nil)
	}
	c.n++
}

// AppendFloat appends a float; an integer column becomes a float column.
func (c *Column) AppendFloat(v float64) {
	switch c.Type {
	case ColumnNull:
		c.Type, c.Floats = ColumnFloat, typed[float64](c)
	case ColumnInt:
		c.Type, c.Floats = ColumnFloat, convert(c.Ints, c.n+c.hint, func(i int64) float64 { return float64(i) })
		c.Ints = nil
	case ColumnUint:
		c.Type, c.Floats = ColumnFloat, convert(c.Uints, c.n+c.hint, func(u uint64) float64 { return float64(u) })
		c.Uints = nil
	case ColumnFloat:
	default:
		c.appendMixed(v)
		return
	}
	c.Floats = append(c.Floats, v)
	c.n++
}

// AppendInt appends a signed integer.
func (c *Column) AppendInt(v int64) {
	switch c.Type {
	case ColumnNull:
		c.Type, c.Ints = ColumnInt, typed[int64](c)
	case ColumnInt:
	case ColumnFloat:
		c.Floats = append(c.Floats, float64(v))
		c.n++
		return
	case ColumnUint:
		if v >= 0 { // MessagePack writes small unsigned values as plain fixints
			c.Uints = append(c.Uints, uint64(v))
			c.n++
			return
		}
		c.appendMixed(v)
		return
	default:
		c.appendMixed(v)
		return
	}
	c.Ints = append(c.Ints, v)
	c.n++
}

// AppendUint appends an unsigned integer.
func (c *Column) AppendUint(v uint64) {
	switch c.Type {
	case ColumnNull:
		c.Type, c.Uints = ColumnUint, typed[uint64](c)
	case ColumnUint:
	case ColumnInt:
		if v <= math.MaxInt64 {
			c.Ints = append(c.Ints, int64(v))
			c.n++
			return
		}
		c.appendMixed(v)
		return
	case ColumnFloat:
		c.Floats = append(c.Floats, float64(v))
		c.n++
		return
	default:
		c.appendMixed(v)
		return
	}
	c.Uints = append(c.Uints, v)
	c.n++
}

// AppendString appends a string.
func (c *Column) AppendString(v string) {
	switch c.Type {
	case ColumnNull:
		c.Type, c.Strings = ColumnString, typed[string](c)
	case ColumnString:
	default:
		c.appendMixed(v)
		return
	}
	c.Strings = append(c.Strings, v)
	c.n++
}

// AppendBool appends a boolean.
func (c *Column) AppendBool(v bool) {
	switch c.Type {
	case ColumnNull:
		c.Type, c.Bools = ColumnBool, typed[bool](c)
	case ColumnBool:
	default:
		c.appendMixed(v)
		return
	}
	c.Bools = append(c.Bools, v)
	c.n++
}

// AppendAny appends a value of any type, typed when it is one of the column types.
func (c *Column) AppendAny(v any) {
	switch x := v.(type) {
	case nil:
		c.AppendNull()
	case float64:
		c.AppendFloat(x)
	case int64:
		c.AppendInt(x)
	case uint64:
		c.AppendUint(x)
	case string:
		c.AppendString(x)
	case bool:
		c.AppendBool(x)
	default:
		c.appendMixed(v)
	}
}

// appendMixed turns the column into a Mixed one, if it is not, and appends v.
func (c *Column) appendMixed(v any) {
	if c.Type != ColumnMixed {
		mixed := make([]any, c.n, c.n+max(c.hint, 1))
		for i := range c.n {
			mixed[i] = c.Value(i)
		}
		c.Type, c.Mixed = ColumnMixed, mixed
		c.Floats, c.Ints, c.Uints, c.Strings, c.Bools = nil, nil, nil, nil, nil
	}
	c.Mixed = append(c.Mixed, v)
	c.n++
}

func convert[S, T any](s []S, capacity int, f func(S) T) []T {
	out := make([]T, len(s), max(capacity, len(s)+1))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}
