package snmp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gosnmp/gosnmp"
)

// column is one field's progress in a walk.
type column struct {
	f      *Field
	cursor string // the last OID answered; the field's prefix before the first answer
	last   string // the last raw index answered; "" before the first
	done   bool
	n      int
}

// walkColumns walks cols together: each request (GETBULK, or GETNEXT with v1) asks for the
// next OIDs of the columns that lag furthest behind, so that the columns advance in step
// and rows complete in index order. onPDU gets every answer inside its column; round runs
// after each answer was handled.
func walkColumns(gs *gosnmp.GoSNMP, cols []*column, onPDU func(*column, *gosnmp.SnmpPDU) error, round func() error) error {
	sel := make([]*column, 0, len(cols))
	oids := make([]string, 0, len(cols))
	for {
		sel, oids = lagging(cols, sel[:0], oids[:0], gs.MaxOids)
		if len(sel) == 0 {
			return nil
		}
		pkt, err := request(gs, oids, sel)
		if err != nil {
			return err
		}
		if pkt == nil { // v1: a column ended; ask again without it
			continue
		}
		if len(pkt.Variables) == 0 {
			for _, c := range sel {
				c.done = true
			}
		}
		for k := range pkt.Variables {
			c := sel[k%len(sel)]
			if c.done {
				continue
			}
			pdu := &pkt.Variables[k]
			if !advance(c, pdu) {
				continue
			}
			if c.n++; c.n > MaxColumnAnswers {
				return fmt.Errorf("walking %s: more than %d answers, the agent's OIDs do not leave the column", c.f.Name, MaxColumnAnswers)
			}
			if err := onPDU(c, pdu); err != nil {
				return err
			}
		}
		if err := round(); err != nil {
			return err
		}
	}
}

// advance moves c's cursor to pdu and tells whether pdu is a value of the column; an
// answer past the column, an end of the MIB or no progress ends the column.
func advance(c *column, pdu *gosnmp.SnmpPDU) bool {
	p := c.f.prefix
	if pdu.Type == gosnmp.EndOfMibView || pdu.Type == gosnmp.NoSuchObject || pdu.Type == gosnmp.NoSuchInstance ||
		len(pdu.Name) <= len(p) || pdu.Name[len(p)] != '.' || !strings.HasPrefix(pdu.Name, p) || pdu.Name == c.cursor {
		c.done = true
		return false
	}
	c.cursor, c.last = pdu.Name, pdu.Name[len(p):]
	return true
}

// lagging selects the columns not done whose last index is the smallest, up to max.
func lagging(cols, sel []*column, oids []string, max int) ([]*column, []string) {
	var low *column
	for _, c := range cols {
		if !c.done && (low == nil || compareIndex(c.last, low.last) < 0) {
			low = c
		}
	}
	if low == nil {
		return sel, oids
	}
	for _, c := range cols {
		if !c.done && c.last == low.last && len(sel) < max {
			sel = append(sel, c)
			oids = append(oids, c.cursor)
		}
	}
	return sel, oids
}

// request asks for the next OIDs. With v1 an error noSuchName marks its column done and
// returns no packet.
func request(gs *gosnmp.GoSNMP, oids []string, sel []*column) (*gosnmp.SnmpPacket, error) {
	if gs.Version != gosnmp.Version1 {
		reps := gs.MaxRepetitions
		if reps == 0 {
			reps = 10
		}
		pkt, err := gs.GetBulk(oids, 0, reps)
		if err != nil {
			return nil, fmt.Errorf("walking %s: %w", sel[0].f.Name, Explain(err))
		}
		if pkt.Error != gosnmp.NoError {
			return nil, fmt.Errorf("walking %s: agent answered %v", sel[0].f.Name, pkt.Error)
		}
		return pkt, nil
	}
	pkt, err := gs.GetNext(oids)
	if err != nil {
		return nil, fmt.Errorf("walking %s: %w", sel[0].f.Name, err)
	}
	switch {
	case pkt.Error == gosnmp.NoSuchName && pkt.ErrorIndex >= 1 && int(pkt.ErrorIndex) <= len(sel):
		sel[pkt.ErrorIndex-1].done = true
		return nil, nil
	case pkt.Error != gosnmp.NoError:
		return nil, fmt.Errorf("walking %s: agent answered %v", sel[0].f.Name, pkt.Error)
	}
	return pkt, nil
}

// Walk walks the table on gs and calls emit with each row. A table without
// oid_index_suffix and secondary index joins is streamed: a row is emitted as soon as every
// column has passed its index, in index order. Other tables are assembled whole (at most
// MaxBufferedRows rows) and emitted at the end, in index order.
func (t *Table) Walk(gs *gosnmp.GoSNMP, emit func(*Row)) error {
	rs := &rowSet{t: t, rows: map[string]*Row{}}
	cols := make([]*column, 0, len(t.Fields))
	secIdx := map[string]string{}
	outer := false
	for i := range t.Fields {
		f := &t.Fields[i]
		if !f.SecondaryIndexTable {
			cols = append(cols, &column{f: f, cursor: f.prefix})
			continue
		}
		// The secondary index column goes first, alone: the join needs all of it.
		outer = f.SecondaryOuterJoin
		err := walkColumns(gs, []*column{{f: f, cursor: f.prefix}}, func(c *column, pdu *gosnmp.SnmpPDU) error {
			return rs.put(c, pdu, func(idx string, v any) {
				if idx[0] != '.' {
					idx = "." + idx
				}
				if s := fmt.Sprint(v); s != "" {
					secIdx["."+s] = idx
				}
			})
		}, func() error { return nil })
		if err != nil {
			return err
		}
	}
	onPDU := func(c *column, pdu *gosnmp.SnmpPDU) error { return rs.put(c, pdu, nil) }
	if len(secIdx) > 0 || outer || t.hasSecondaryUse() {
		onPDU = func(c *column, pdu *gosnmp.SnmpPDU) error { return rs.putJoined(c, pdu, secIdx, outer) }
	}
	round := func() error { return nil }
	if t.streaming {
		round = func() error { rs.flush(cols, emit); return nil }
	}
	if err := walkColumns(gs, cols, onPDU, round); err != nil {
		rs.flush(nil, emit) // what was read is still worth emitting
		return err
	}
	rs.flush(nil, emit)
	return nil
}

func (t *Table) hasSecondaryUse() bool {
	for i := range t.Fields {
		if t.Fields[i].SecondaryIndexUse {
			return true
		}
	}
	return false
}

// put converts pdu and adds it to the row of its index; seen, when set, gets the row's
// index and the converted value.
func (rs *rowSet) put(c *column, pdu *gosnmp.SnmpPDU, seen func(idx string, v any)) error {
	idx, ok := c.f.index(c.last)
	if !ok {
		return nil
	}
	v, err := c.f.Convert(pdu)
	if err != nil {
		return fmt.Errorf("converting %q (OID %s) for field %s: %w", pdu.Value, pdu.Name, c.f.Name, err)
	}
	r, err := rs.get(idx)
	if err != nil {
		return err
	}
	r.add(c.f, v)
	if seen != nil {
		seen(idx, v)
	}
	return nil
}

// putJoined is put for a table with a secondary index: a secondary_index_use column's
// index is replaced by the primary index that points to it.
func (rs *rowSet) putJoined(c *column, pdu *gosnmp.SnmpPDU, secIdx map[string]string, outer bool) error {
	if !c.f.SecondaryIndexUse {
		return rs.put(c, pdu, nil)
	}
	idx, ok := c.f.index(c.last)
	if !ok {
		return nil
	}
	if p, found := secIdx[idx]; found {
		idx = p
	} else if outer || c.f.SecondaryOuterJoin {
		idx = ".Secondary" + idx
	} else {
		return nil
	}
	v, err := c.f.Convert(pdu)
	if err != nil {
		return fmt.Errorf("converting %q (OID %s) for field %s: %w", pdu.Value, pdu.Name, c.f.Name, err)
	}
	r, err := rs.get(idx)
	if err != nil {
		return err
	}
	r.add(c.f, v)
	return nil
}

// flush emits, in index order, the rows every column has passed: all of them when cols
// is nil or every column is done.
func (rs *rowSet) flush(cols []*column, emit func(*Row)) {
	if len(rs.rows) == 0 {
		return
	}
	mark, all := "", true
	for _, c := range cols {
		if c.done {
			continue
		}
		w, _ := c.f.index(c.last)
		if all || compareIndex(w, mark) < 0 {
			mark, all = w, false
		}
	}
	keys := make([]string, 0, len(rs.rows))
	for k := range rs.rows {
		if all || compareIndex(k, mark) < 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareIndex)
	for _, k := range keys {
		emit(rs.rows[k])
		delete(rs.rows, k)
	}
}

// GetScalars reads fields with GET requests (at most gs.MaxOids OIDs each) and returns
// their values as one row with index "", or nil when the agent has none of them.
func GetScalars(gs *gosnmp.GoSNMP, fields []Field) (*Row, error) {
	var row *Row
	for start := 0; start < len(fields); start += gs.MaxOids {
		chunk := fields[start:min(len(fields), start+gs.MaxOids)]
		oids := make([]string, len(chunk))
		for i := range chunk {
			oids[i] = chunk[i].prefix
		}
		pkt, err := gs.Get(oids)
		if err == nil && pkt.Error == gosnmp.NoSuchName && len(chunk) > 1 {
			// v1 refuses the whole request for one unknown OID: ask one by one.
			for i := range chunk {
				r, err := GetScalars(gs, chunk[i:i+1])
				if err != nil {
					return nil, err
				}
				row = mergeRow(row, r)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("performing get on field %s: %w", chunk[0].Name, Explain(err))
		}
		switch pkt.Error {
		case gosnmp.NoError:
		case gosnmp.NoSuchName: // v1: the agent has no such object
			continue
		default:
			return nil, fmt.Errorf("performing get on field %s: agent answered %v", chunk[0].Name, pkt.Error)
		}
		for i := range pkt.Variables {
			pdu := &pkt.Variables[i]
			if i >= len(chunk) || pdu.Type == gosnmp.NoSuchObject || pdu.Type == gosnmp.NoSuchInstance || pdu.Type == gosnmp.EndOfMibView {
				continue
			}
			f := &chunk[i]
			v, err := f.Convert(pdu)
			if err != nil {
				return nil, fmt.Errorf("converting %q (OID %s) for field %s: %w", pdu.Value, pdu.Name, f.Name, err)
			}
			if row == nil {
				row = &Row{}
			}
			row.add(f, v)
		}
	}
	return row, nil
}

func mergeRow(into, r *Row) *Row {
	if into == nil {
		return r
	}
	if r != nil {
		into.Tags = append(into.Tags, r.Tags...)
		into.Fields = append(into.Fields, r.Fields...)
	}
	return into
}
