package csv

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
)

// metadataSeparators returns the separators without repeats, the longest first (ties in
// configured order), so that ":=" is tried before ":".
func metadataSeparators(list []string) []string {
	var seps []string
	for _, s := range list {
		if s != "" && !slices.Contains(seps, s) {
			seps = append(seps, s)
		}
	}
	slices.SortStableFunc(seps, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return seps
}

// addMetadata reads a metadata row: the first separator found splits it into a key and a
// value, both trimmed of csv_metadata_trim_set. A row without a separator, or whose key is
// empty once trimmed, adds nothing; a later row replaces an earlier row's key.
func (p *Parser) addMetadata(row []byte) {
	text := string(bytes.TrimRight(row, "\r\n"))
	for _, sep := range p.metaSeps {
		k, v, ok := strings.Cut(text, sep)
		if !ok {
			continue
		}
		k = strings.Trim(k, p.o.MetadataTrimSet)
		if k == "" {
			continue
		}
		v = strings.Trim(v, p.o.MetadataTrimSet)
		for i := range p.st.meta {
			if p.st.meta[i].Key == k {
				p.st.meta[i].Value = v
				return
			}
		}
		p.st.meta = append(p.st.meta, morse.Tag{Key: k, Value: v})
		return
	}
}

// addHeader reads a header row: each column's name is joined to what the rows before gave
// it. With csv_column_names the row is only skipped.
func (p *Parser) addHeader(record []string) {
	p.st.headerLeft--
	if p.st.namesDone {
		return
	}
	for i, name := range record {
		if p.o.TrimSpace {
			name = strings.Trim(name, " ")
		}
		if i < len(p.st.names) {
			p.st.names[i] += name
		} else {
			p.st.names = append(p.st.names, name)
		}
	}
}

// finishNames drops the skipped columns' names once the header rows are read.
func (p *Parser) finishNames() {
	names := p.st.names[min(p.o.SkipColumns, len(p.st.names)):]
	p.st.names = names
	p.st.namesDone = true
	p.st.plan, p.st.dupNames = p.makePlan(names)
}

// colKind is what a column of a data row becomes.
type colKind uint8

const (
	kindField colKind = iota
	kindTag
	kindTime
	kindNone // an unnamed column, left out
)

// column is the plan for one column of the data rows.
type column struct {
	name        string
	kind        colKind
	measurement bool    // the value names the metric instead of being a field
	typed       bool    // csv_column_types gives the type
	typ         colType // the type when typed
	noType      bool    // csv_column_types is given but too short for this column
}

// makePlan decides what each named column becomes, in Telegraf's order of precedence: tag
// column, then timestamp column, then field (the measurement column is a field that names
// the metric). It reports whether two columns share a name.
func (p *Parser) makePlan(names []string) ([]column, bool) {
	plan := make([]column, len(names))
	dup := false
	for i, name := range names {
		c := column{name: name, measurement: name == p.o.MeasurementColumn}
		_, tag := p.tagSet[name]
		switch {
		case name == "":
			c.kind = kindNone
		case tag:
			c.kind = kindTag
		case name == p.o.TimestampColumn:
			c.kind = kindTime
		case len(p.types) > 0 && i >= len(p.types):
			c.noType = true
		case len(p.types) > 0:
			c.typed, c.typ = true, p.types[i]
		}
		plan[i] = c
		dup = dup || slices.Contains(names[:i], name)
	}
	return plan, dup
}
