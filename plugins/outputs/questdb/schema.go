package questdb

import (
	"strings"
	"sync"

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
// A column this output did not create is not known, so a conflict with it still reaches the
// server (see tcpwrite.go). The memory is dropped when the sender gives up a batch, in case
// a table was dropped and made anew with other types.

// maxSchemaColumns bounds what the schema remembers; past it, new columns are not learned.
const maxSchemaColumns = 100_000

// schema is the column types learned from what this output has sent over TCP.
type schema struct {
	mu      sync.Mutex
	tables  map[string]map[string]string // table → column → the ILP type that made it
	columns int
}

func (s *schema) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables, s.columns = nil, 0
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

// check refuses a metric whose field conflicts with a learned column, and learns the
// columns it adds. It is called in batch order, the order in which QuestDB reads the lines.
func (s *schema) check(m morse.Metric) *LineError {
	s.mu.Lock()
	defer s.mu.Unlock()
	table := tableKey(m)
	cols := s.tables[table]
	var conflict *LineError
	eachField(m, func(key, typ string) bool {
		if made, ok := cols[key]; ok {
			if !accepts(made, typ) {
				conflict = &LineError{Reason: morse.ReasonFieldTypeConflict, Err: &typeConflict{table, key, typ, made}}
				return false
			}
		}
		return true
	})
	if conflict != nil {
		return conflict
	}
	eachField(m, func(key, typ string) bool {
		if _, ok := cols[key]; ok || s.columns >= maxSchemaColumns {
			return true
		}
		if cols == nil {
			if s.tables == nil {
				s.tables = map[string]map[string]string{}
			}
			cols = map[string]string{}
			s.tables[table] = cols
		}
		cols[key] = typ
		s.columns++
		return true
	})
	return nil
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
