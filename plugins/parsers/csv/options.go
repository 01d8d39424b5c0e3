package csv

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// The values of csv_reset_mode.
const (
	ResetNone   = "none"   // leading rows are read once per parser (the default)
	ResetAlways = "always" // every Parse reads a whole document with its leading rows
)

// Options are the csv format's settings, under Telegraf 1.39.3's keys.
type Options struct {
	// HeaderRowCount (csv_header_row_count) is how many rows after the skip and metadata
	// rows name the columns; the names of several header rows are joined per column.
	// Either it or ColumnNames is required.
	HeaderRowCount int `toml:"csv_header_row_count"`
	// ColumnNames (csv_column_names) names the columns (after csv_skip_columns); given, it
	// overrides the header rows, which are then only skipped. An unnamed ("") column is left
	// out.
	ColumnNames []string `toml:"csv_column_names"`
	// ColumnTypes (csv_column_types) gives each named column's type: "int", "float",
	// "bool" or "string". Without it a value is an int if it reads as one, else a float,
	// else a bool, else a string.
	ColumnTypes []string `toml:"csv_column_types"`
	// SkipRows (csv_skip_rows) is how many lines to ignore at the start.
	SkipRows int `toml:"csv_skip_rows"`
	// SkipColumns (csv_skip_columns) is how many columns to ignore at the start of each row
	// and of each header row.
	SkipColumns int `toml:"csv_skip_columns"`
	// Delimiter (csv_delimiter) is the one character between values; empty means ",".
	Delimiter string `toml:"csv_delimiter"`
	// Comment (csv_comment) is the one character that starts a line to ignore.
	Comment string `toml:"csv_comment"`
	// TrimSpace (csv_trim_space) removes white space before values and spaces after them.
	TrimSpace bool `toml:"csv_trim_space"`
	// TagColumns (csv_tag_columns) are the columns that become tags instead of fields.
	TagColumns []string `toml:"csv_tag_columns"`
	// TagOverwrite (csv_tag_overwrite) lets a tag column's value replace a metadata tag of
	// the same key; by default the metadata tag wins.
	TagOverwrite bool `toml:"csv_tag_overwrite"`
	// MeasurementColumn (csv_measurement_column) is the column that names each row's
	// metric; an empty value leaves the input's name.
	MeasurementColumn string `toml:"csv_measurement_column"`
	// TimestampColumn (csv_timestamp_column) is the column that holds each row's time;
	// without it a row gets the time it is read.
	TimestampColumn string `toml:"csv_timestamp_column"`
	// TimestampFormat (csv_timestamp_format) is how that column is written: "unix",
	// "unix_ms", "unix_us", "unix_ns", "timestamp_tz" (and its _ms, _us, _ns forms: a Unix
	// number counted in csv_timezone's wall clock), a Go layout, or a layout's name
	// ("RFC3339", "ANSIC", ...). Required with TimestampColumn.
	TimestampFormat string `toml:"csv_timestamp_format"`
	// Timezone (csv_timezone) is the IANA zone of timestamps whose layout has no offset;
	// empty means UTC.
	Timezone string `toml:"csv_timezone"`
	// SkipValues (csv_skip_values) are values that leave their column out of the row, "" for
	// empty values.
	SkipValues []string `toml:"csv_skip_values"`
	// SkipErrors (csv_skip_errors) is accepted for Telegraf's configs: morse always keeps
	// the good rows around a bad one, and counts the bad one whatever this says.
	SkipErrors bool `toml:"csv_skip_errors"`
	// MetadataRows (csv_metadata_rows) is how many lines after the skip rows hold
	// "key<separator>value" pairs that become tags of every row.
	MetadataRows int `toml:"csv_metadata_rows"`
	// MetadataSeparators (csv_metadata_separators) are the separators of metadata rows, the
	// longest tried first. Required with MetadataRows.
	MetadataSeparators []string `toml:"csv_metadata_separators"`
	// MetadataTrimSet (csv_metadata_trim_set) are the characters trimmed from both ends of
	// metadata keys and values.
	MetadataTrimSet string `toml:"csv_metadata_trim_set"`
	// ResetMode (csv_reset_mode) is ResetNone (empty means it) or ResetAlways.
	ResetMode string `toml:"csv_reset_mode"`
}

// Validate reports every problem of the options in one error.
func (o *Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, morse.Errorf(key, format, args...)) }
	if o.HeaderRowCount == 0 && len(o.ColumnNames) == 0 {
		bad("csv_header_row_count", "must be set when csv_column_names is not")
	}
	for _, c := range []struct {
		key string
		n   int
	}{{"csv_header_row_count", o.HeaderRowCount}, {"csv_skip_rows", o.SkipRows},
		{"csv_skip_columns", o.SkipColumns}, {"csv_metadata_rows", o.MetadataRows}} {
		if c.n < 0 {
			bad(c.key, "%d is negative", c.n)
		}
	}
	checkCharacters(o.Delimiter, o.Comment, bad)
	if len(o.ColumnNames) > 0 && len(o.ColumnTypes) > 0 && len(o.ColumnNames) != len(o.ColumnTypes) {
		bad("csv_column_types", "%d types for %d csv_column_names", len(o.ColumnTypes), len(o.ColumnNames))
	}
	if _, err := parseTypes(o.ColumnTypes); err != nil {
		bad("csv_column_types", "%v", err)
	}
	if o.MetadataRows > 0 && len(o.MetadataSeparators) == 0 {
		bad("csv_metadata_separators", "required with csv_metadata_rows")
	}
	for _, s := range o.MetadataSeparators {
		if s == "" {
			bad("csv_metadata_separators", "an empty separator")
			break
		}
	}
	if o.TimestampColumn != "" && o.TimestampFormat == "" {
		bad("csv_timestamp_format", "required with csv_timestamp_column")
	}
	if _, err := newTimeFormat(o.TimestampFormat, o.Timezone); err != nil {
		bad("csv_timezone", "%v", err)
	}
	switch o.ResetMode {
	case "":
		o.ResetMode = ResetNone
	case ResetNone, ResetAlways:
	default:
		bad("csv_reset_mode", "%q is not %q or %q", o.ResetMode, ResetNone, ResetAlways)
	}
	return errors.Join(errs...)
}

// checkCharacters checks csv_delimiter and csv_comment: one character each, a comment
// character that encoding/csv takes and that is not the delimiter.
func checkCharacters(delimiter, comment string, bad func(key, format string, args ...any)) {
	comma := ','
	if utf8.RuneCountInString(delimiter) > 1 {
		bad("csv_delimiter", "%q is not a single character", delimiter)
	} else if delimiter != "" {
		if r, _ := utf8.DecodeRuneInString(delimiter); validDelim(r) {
			comma = r
		}
	}
	if utf8.RuneCountInString(comment) > 1 {
		bad("csv_comment", "%q is not a single character", comment)
	} else if comment != "" {
		switch r, _ := utf8.DecodeRuneInString(comment); {
		case !validDelim(r):
			bad("csv_comment", "%q cannot mark comments (NUL, a quote or a line ending)", comment)
		case r == comma:
			bad("csv_comment", "%q is also the delimiter", comment)
		}
	}
}

// colType is a declared column type.
type colType uint8

const (
	typeString colType = iota
	typeInt
	typeFloat
	typeBool
)

func parseTypes(names []string) ([]colType, error) {
	types := make([]colType, len(names))
	for i, n := range names {
		switch n {
		case "int":
			types[i] = typeInt
		case "float":
			types[i] = typeFloat
		case "bool":
			types[i] = typeBool
		case "string":
			types[i] = typeString
		default:
			return nil, fmt.Errorf("%q is not int, float, bool or string", n)
		}
	}
	return types, nil
}
