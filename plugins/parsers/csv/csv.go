// Package csv reads Telegraf's "csv" data format: one metric per row of comma (or
// csv_delimiter) separated values, with column names from header rows or csv_column_names,
// tags from csv_tag_columns and from metadata rows, the measurement and time from columns
// of their own, and field types declared or inferred as Telegraf infers them (int, then
// float, then bool, then string).
//
// The parser keeps Telegraf's state from payload to payload: skip rows, metadata rows and
// header rows are read once, at the start of the first payload (or the first lines given to
// ParseLine), and later payloads are data rows only unless csv_reset_mode is "always".
//
// Unlike Telegraf, a row that cannot be read (a quoting error, a value that is not of its
// declared type, a timestamp that does not parse) is refused alone: it is counted and placed
// in the *parsers.Error that Parse returns, and the rows around it are kept.
package csv

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// Parser reads csv. It holds the state of the header and metadata rows read so far, so a
// Parser serves one stream (one file, one tailed file, one connection); its methods may be
// called from several goroutines, one at a time.
type Parser struct {
	o        Options
	settings parsers.Settings
	comma    rune
	comment  rune
	// substitute is set for a delimiter that encoding/csv cannot take (NUL, a quote, a line
	// ending): as in Telegraf, commas in the payload become U+FFFD and the delimiter a comma.
	substitute bool
	timeFmt    timeFormat
	types      []colType
	skipSet    map[string]struct{}
	tagSet     map[string]struct{}
	metaSeps   []string
	// fixed is the column plan when csv_column_names gives the names, made once.
	fixed    []column
	fixedDup bool

	mu sync.Mutex
	st state
}

// state is what the parser has read of a stream's leading rows.
type state struct {
	skipLeft, metaLeft, headerLeft int
	names                          []string // column names, after csv_skip_columns
	namesDone                      bool
	meta                           []morse.Tag // tags from metadata rows, in row order, keys unique
	plan                           []column    // what each column becomes, once names are known
	dupNames                       bool        // two columns share a name: the later one wins
}

// New builds a parser from validated options.
func New(o Options, s parsers.Settings) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Parser{o: o, settings: s, comma: ','}
	if o.Delimiter != "" {
		r, _ := utf8.DecodeRuneInString(o.Delimiter)
		if validDelim(r) {
			p.comma = r
		} else {
			p.substitute = true
		}
	}
	if o.Comment != "" {
		p.comment, _ = utf8.DecodeRuneInString(o.Comment)
	}
	p.timeFmt, _ = newTimeFormat(o.TimestampFormat, o.Timezone)
	p.types, _ = parseTypes(o.ColumnTypes)
	p.skipSet = stringSet(o.SkipValues)
	p.tagSet = stringSet(o.TagColumns)
	p.metaSeps = metadataSeparators(o.MetadataSeparators)
	if len(o.ColumnNames) > 0 {
		p.fixed, p.fixedDup = p.makePlan(o.ColumnNames)
	}
	p.reset()
	return p, nil
}

func stringSet(list []string) map[string]struct{} {
	if len(list) == 0 {
		return nil
	}
	set := make(map[string]struct{}, len(list))
	for _, s := range list {
		set[s] = struct{}{}
	}
	return set
}

// reset forgets what was read of the leading rows, as a new stream starts.
func (p *Parser) reset() {
	p.st = state{skipLeft: p.o.SkipRows, metaLeft: p.o.MetadataRows, headerLeft: p.o.HeaderRowCount}
	if len(p.o.ColumnNames) > 0 {
		// Names given in the config are not shifted by csv_skip_columns: they name the
		// columns that remain.
		p.st.names = p.o.ColumnNames
		p.st.namesDone = true
		p.st.plan, p.st.dupNames = p.fixed, p.fixedDup
	}
}

// Parse reads a payload: with csv_reset_mode "always" a whole document with its leading
// rows, otherwise the continuation of what earlier payloads started. Every row that is not
// a leading row becomes a metric or a refused entry of the returned *parsers.Error.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.o.ResetMode == ResetAlways {
		p.reset()
	}
	line := 0
	for p.st.skipLeft > 0 && len(data) > 0 {
		_, data = cutLine(data)
		line++
		p.st.skipLeft--
	}
	for p.st.metaLeft > 0 && len(data) > 0 {
		var row []byte
		row, data = cutLine(data)
		line++
		p.st.metaLeft--
		p.addMetadata(row)
	}
	var errs parsers.Error
	p.read(data, line, emit, &errs)
	return errs.Err()
}

// ParseLine reads one line of a stream, without its line ending, as Telegraf's ParseLine
// does: a skip or metadata row is consumed even when empty, a header row is the next line
// with a record (not empty, not a comment), and each line after is a data row. csv_reset_mode does not apply: a stream is read once.
func (p *Parser) ParseLine(line []byte, emit func(morse.Metric)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	line = bytes.TrimRight(line, "\r\n")
	switch {
	case p.st.skipLeft > 0:
		p.st.skipLeft--
		return nil
	case p.st.metaLeft > 0:
		p.st.metaLeft--
		p.addMetadata(line)
		return nil
	}
	var errs parsers.Error
	p.read(line, 0, emit, &errs)
	return errs.Err()
}

// cutLine returns the first line of data, its "\n" included, and the rest.
func cutLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i+1], data[i+1:]
	}
	return data, nil
}

// read reads the csv rows of data, whose first line is line+1 of the payload: header rows
// while some are due, data rows after.
func (p *Parser) read(data []byte, line int, emit func(morse.Metric), errs *parsers.Error) {
	if len(data) == 0 {
		return
	}
	if p.substitute {
		data = bytes.ReplaceAll(data, []byte{','}, []byte("\ufffd"))
		data = bytes.ReplaceAll(data, []byte(p.o.Delimiter), []byte{','})
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = p.comma
	r.Comment = p.comment
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	r.TrimLeadingSpace = p.o.TrimSpace
	b := builder{p: p, emit: emit, errs: errs, r: r, line: line, rows: rowText{data: data}}
	for {
		record, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			b.syntax(err)
			continue
		}
		if p.st.headerLeft > 0 {
			p.addHeader(record)
			continue
		}
		if !p.st.namesDone {
			p.finishNames()
		}
		b.row(record)
	}
}

// syntax counts a row that is not csv as refused. encoding/csv reads on at the next line
// (or, for an unterminated quote, at the end of the payload).
func (b *builder) syntax(err error) {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		b.errs.Add(parsers.EntryError{Err: err}) // the reader only reads memory: not reached
		return
	}
	b.errs.Add(parsers.EntryError{Line: b.line + pe.StartLine, Column: pe.Column, Text: b.rows.line(pe.StartLine), Err: pe.Err})
}

// rowText finds the text of a line of data for error messages, scanning forward only, so
// that the cost is paid once per payload and only when rows are refused.
type rowText struct {
	data []byte
	at   int // offset of line n
	n    int // 1-based number of the line at offset at; 0 before the first use
}

func (t *rowText) line(n int) string {
	if t.n == 0 || n < t.n {
		t.at, t.n = 0, 1
	}
	for t.n < n {
		i := bytes.IndexByte(t.data[t.at:], '\n')
		if i < 0 {
			return ""
		}
		t.at += i + 1
		t.n++
	}
	text, _ := cutLine(t.data[t.at:])
	return parsers.Excerpt(bytes.TrimRight(text, "\r\n"))
}

// validDelim is what encoding/csv accepts as a delimiter or comment character.
func validDelim(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && utf8.ValidRune(r) && r != utf8.RuneError
}
