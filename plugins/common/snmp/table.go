package snmp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/morse-agent/morse"
)

// MaxBufferedRows bounds the rows a table holds at once when it cannot stream them: a
// table with oid_index_suffix or a secondary index join is assembled whole before its
// rows are emitted, and a walk that passes this many rows is cut off with an error.
// Streamed tables hold only the rows still missing a column, at most about
// max_repetitions rows per column.
const MaxBufferedRows = 100_000

// MaxColumnAnswers bounds the answers one column of a walk takes, so that an agent whose
// OIDs never leave the column (some do not increase strictly) cannot keep a walk going.
const MaxColumnAnswers = 1 << 20

// Table is one [[inputs.snmp.table]]: columns walked together, one metric per row.
type Table struct {
	// Name is the measurement; the MIB's name of Oid when empty.
	Name string `toml:"name"`
	// InheritTags are tags of the top-level fields copied to every row.
	InheritTags []string `toml:"inherit_tags"`
	// IndexAsTag adds each row's index as the tag "index".
	IndexAsTag bool `toml:"index_as_tag"`
	// Fields are the columns.
	Fields []Field `toml:"field"`
	// Oid, when set, adds every column the MIB defines for the table (its INDEX columns
	// as tags) to Fields.
	Oid string `toml:"oid"`

	streaming bool
}

// Row is one row of a table: its index (with a leading dot, "" for the top-level
// fields), tags and fields. The slices belong to whoever receives the row.
type Row struct {
	Index  string
	Tags   []morse.Tag
	Fields []morse.Field
}

// Init adds the MIB's columns when Oid is set, initializes each field and checks the
// options, as Telegraf's Table.Init does.
func (t *Table) Init() error {
	if t.Oid == "" && t.Name == "" {
		return errors.New("unnamed SNMP table in config file: one or both of the oid and name settings must be set")
	}
	if t.Oid != "" {
		name, cols, err := tableColumns(t.Oid)
		if err != nil {
			return err
		}
		if t.Name == "" {
			t.Name = name
		}
		known := make(map[string]bool, len(t.Fields))
		for _, f := range t.Fields {
			known[f.Oid] = true
		}
		for _, c := range cols {
			if !known[c.Oid] {
				t.Fields = append(t.Fields, c)
			}
		}
	}
	t.streaming = true
	secondary := false
	for i := range t.Fields {
		f := &t.Fields[i]
		if err := f.Init(); err != nil {
			return fmt.Errorf("initializing field %s: %w", f.Name, err)
		}
		if f.SecondaryIndexTable {
			if secondary {
				return errors.New("only one field can be secondary_index_table")
			}
			secondary = true
		}
		if f.OidIndexSuffix != "" || f.SecondaryIndexTable || f.SecondaryIndexUse {
			t.streaming = false
		}
	}
	return nil
}

// rowSet assembles rows from the columns' answers.
type rowSet struct {
	t    *Table
	rows map[string]*Row
}

func (rs *rowSet) get(idx string) (*Row, error) {
	r := rs.rows[idx]
	if r != nil {
		return r, nil
	}
	if len(rs.rows) >= MaxBufferedRows {
		return nil, fmt.Errorf("table %s: more than %d rows to hold at once", rs.t.Name, MaxBufferedRows)
	}
	r = &Row{Index: idx, Fields: make([]morse.Field, 0, len(rs.t.Fields))}
	if rs.t.IndexAsTag && idx != "" {
		r.Tags = append(r.Tags, morse.Tag{Key: "index", Value: strings.TrimPrefix(idx, ".")})
	}
	rs.rows[idx] = r
	return r, nil
}

// add puts f's value into r, replacing an earlier value of the same name as Telegraf's
// maps do.
func (r *Row) add(f *Field, v any) {
	tag, val, ok := f.cell(v)
	if !ok {
		return
	}
	if f.IsTag {
		for i := range r.Tags {
			if r.Tags[i].Key == f.Name {
				r.Tags[i].Value = tag
				return
			}
		}
		r.Tags = append(r.Tags, morse.Tag{Key: f.Name, Value: tag})
		return
	}
	for i := range r.Fields {
		if r.Fields[i].Key == f.Name {
			r.Fields[i].Value = val
			return
		}
	}
	r.Fields = append(r.Fields, morse.Field{Key: f.Name, Value: val})
}

// index maps a raw index (".3.1") through oid_index_suffix and oid_index_length; false
// when the answer lacks the suffix and is skipped.
func (f *Field) index(raw string) (string, bool) {
	if f.OidIndexSuffix != "" {
		if !strings.HasSuffix(raw, f.OidIndexSuffix) {
			return "", false
		}
		raw = raw[:len(raw)-len(f.OidIndexSuffix)]
	}
	if f.OidIndexLength > 0 {
		n := 0
		for i := 0; i < len(raw); i++ {
			if raw[i] == '.' {
				if n == f.OidIndexLength {
					return raw[:i], true
				}
				n++
			}
		}
	}
	return raw, true
}

// compareIndex orders two indexes (".1.10" after ".1.9") sub-identifier by number; ""
// comes first.
func compareIndex(a, b string) int {
	for {
		if a == "" || b == "" {
			return len(a) - len(b)
		}
		a, b = a[1:], b[1:] // the dots
		i, j := 0, 0
		for i < len(a) && a[i] != '.' {
			i++
		}
		for j < len(b) && b[j] != '.' {
			j++
		}
		if i != j { // no leading zeros in OIDs: the longer number is the larger
			return i - j
		}
		if c := strings.Compare(a[:i], b[:j]); c != 0 {
			return c
		}
		a, b = a[i:], b[j:]
	}
}
