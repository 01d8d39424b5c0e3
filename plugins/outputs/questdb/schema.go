package questdb

import (
	"strings"

	"github.com/morse-agent/morse"
)

// Over TCP a value of the wrong type for its column makes QuestDB drop the connection and
// everything after the line, without saying which line it was. To keep such a line from
// costing its batch-mates, the TCP sender remembers, per table, the ILP type that first
// wrote each field column through this output, and refuses a later value that QuestDB
// would refuse for a column of that type (field_type_conflict), as QuestDB 9.1.0 does:
//
//	column made by  its type   takes
//	INTEGER         LONG       INTEGER, BOOLEAN (stored as 1 or 0)
//	FLOAT           DOUBLE     FLOAT, INTEGER, BOOLEAN
//	STRING          VARCHAR    STRING
//	BOOLEAN         BOOLEAN    BOOLEAN
//
// A column is learned only once the batch that made it is confirmed (see tcpwrite.go). A
// column this output did not make, or one that the same batch makes, is not known, so a
// conflict with it still reaches the server. The memory is dropped when the sender gives up
// a batch, in case a table was dropped and made anew with other types.

// maxSchemaColumns bounds what the schema remembers, and maxStaged what one batch may add;
// past them, new columns are not learned.
const (
	maxSchemaColumns = 100_000
	maxStaged        = 256
)

// schema is the column types learned from what this output has sent over TCP and seen
// confirmed. The sender holds its lock while using it.
type schema struct {
	tables  map[string]map[string]string // table → column → the ILP type that made it
	columns int
	staged  []column // columns the batch being written adds, learned once it is confirmed
}

type column struct{ table, name, typ string }

// reset forgets everything, for when a table may have been made anew with other types.
func (s *schema) reset() {
	s.tables, s.columns, s.staged = nil, 0, s.staged[:0]
}

// learn adds the columns of a confirmed batch.
func (s *schema) learn(cols []column) {
	for _, c := range cols {
		if s.columns >= maxSchemaColumns {
			return
		}
		if _, ok := s.tables[c.table][c.name]; ok {
			continue
		}
		if s.tables == nil {
			s.tables = map[string]map[string]string{}
		}
		t := s.tables[c.table]
		if t == nil {
			t = map[string]string{}
			s.tables[strings.Clone(c.table)] = t
		}
		t[strings.Clone(c.name)] = c.typ
		s.columns++
	}
}

// accepts reports whether a column made by ILP type made takes a value of ILP type typ.
func accepts(made, typ string) bool {
	switch made {
	case "INTEGER":
		return typ == "INTEGER" || typ == "BOOLEAN"
	case "FLOAT":
		return typ == "FLOAT" || typ == "INTEGER" || typ == "BOOLEAN"
	}
	return made == typ
}

// check refuses a metric whose field conflicts with a learned column, and stages the
// columns it may add. Only confirmed columns are trusted: a column first seen in the batch
// may exist on the server with another type, and then the server decides.
func (s *schema) check(m morse.Metric) *LineError {
	table := tableKey(m)
	cols := s.tables[table]
	var conflict *LineError
	eachField(m, func(key, typ string) bool {
		made, ok := cols[key]
		switch {
		case ok && !accepts(made, typ):
			conflict = &LineError{Reason: morse.ReasonFieldTypeConflict, Err: &typeConflict{table, key, typ, made}}
			return false
		case !ok && len(s.staged) < maxStaged && !s.isStaged(table, key):
			s.staged = append(s.staged, column{table, key, typ})
		}
		return true
	})
	return conflict
}

func (s *schema) isStaged(table, name string) bool {
	for _, c := range s.staged {
		if c.name == name && c.table == table {
			return true
		}
	}
	return false
}

// typeConflict is the refusal of a value whose type the column does not take.
type typeConflict struct{ table, column, typ, made string }

func (e *typeConflict) Error() string {
	return "table " + e.table + ", column " + e.column + ": a " + e.typ + " value does not fit the column that a " +
		e.made + " value made (refused before sending: over TCP QuestDB would drop the connection)"
}

// eachField calls f with each field's key (as written in line protocol, for a line metric)
// and ILP type, until f returns false.
func eachField(m morse.Metric, f func(key, typ string) bool) {
	if lt, ok := m.Line(); ok {
		_, fields := lt.Split()
		for fields != "" {
			key, rest := splitUnescaped(fields, '=')
			value, next := fieldValue(rest[min(1, len(rest)):])
			if !f(key, textType(value)) {
				return
			}
			fields = next
		}
		return
	}
	for _, fl := range m.Fields() {
		if !f(fl.Key, protocolType(fl.Value)) {
			return
		}
	}
}

// textType is the ILP type of a value as written in line protocol.
func textType(v string) string {
	switch {
	case strings.HasPrefix(v, `"`):
		return "STRING"
	case v == "":
		return ""
	}
	switch v[len(v)-1] {
	case 'i', 'u':
		return "INTEGER"
	case 't', 'T', 'e', 'E', 'f', 'F':
		if c := v[0]; c == 't' || c == 'T' || c == 'f' || c == 'F' {
			return "BOOLEAN"
		}
	}
	return "FLOAT"
}
