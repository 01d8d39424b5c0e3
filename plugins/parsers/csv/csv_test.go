package csv_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/csv"
)

var (
	_ parsers.Parser     = (*csv.Parser)(nil)
	_ parsers.LineParser = (*csv.Parser)(nil)
)

func newParser(t testing.TB, o csv.Options) *csv.Parser {
	t.Helper()
	p, err := csv.New(o, parsers.Settings{MetricName: "csv", Now: func() time.Time { return defaultTime }})
	require.NoError(t, err)
	return p
}

func collect(t testing.TB, p *csv.Parser, data string) ([]morse.Metric, error) {
	t.Helper()
	var ms []morse.Metric
	err := p.Parse([]byte(data), func(m morse.Metric) { ms = append(ms, m) })
	return ms, err
}

// TestValidateAllProblems checks that one run reports every problem, each under its key.
func TestValidateAllProblems(t *testing.T) {
	o := csv.Options{
		SkipRows:           -1,
		SkipColumns:        -2,
		Delimiter:          ";;",
		Comment:            "\n",
		ColumnNames:        []string{"a", "b"},
		ColumnTypes:        []string{"int", "integer", "bool"},
		MetadataRows:       1,
		TimestampColumn:    "t",
		Timezone:           "Mars/Olympus",
		ResetMode:          "sometimes",
		MetadataSeparators: nil,
	}
	err := o.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"csv_skip_rows: -1 is negative",
		"csv_skip_columns: -2 is negative",
		`csv_delimiter: ";;" is not a single character`,
		`csv_comment: "\n" cannot mark comments`,
		"csv_column_types: 3 types for 2 csv_column_names",
		`csv_column_types: "integer" is not int, float, bool or string`,
		"csv_metadata_separators: required with csv_metadata_rows",
		"csv_timestamp_format: required with csv_timestamp_column",
		`csv_timezone: unknown time zone "Mars/Olympus"`,
		`csv_reset_mode: "sometimes" is not "none" or "always"`,
	} {
		require.ErrorContains(t, err, want)
	}
	var fe *morse.FieldError
	require.ErrorAs(t, err, &fe)

	err = (&csv.Options{}).Validate()
	require.ErrorContains(t, err, "csv_header_row_count: must be set when csv_column_names is not")
	err = (&csv.Options{HeaderRowCount: 1, Delimiter: ";", Comment: ";"}).Validate()
	require.ErrorContains(t, err, `csv_comment: ";" is also the delimiter`)
	_, err = csv.New(csv.Options{}, parsers.Settings{})
	require.Error(t, err)

	ok := csv.Options{HeaderRowCount: 1}
	require.NoError(t, ok.Validate())
	require.Equal(t, csv.ResetNone, ok.ResetMode, "the default reset mode is set")
}

// TestNullDelimiter is Telegraf's TestNullDelimiter: a delimiter encoding/csv cannot take
// is read by swapping it with commas, and a comma in a value comes out as U+FFFD, as in
// Telegraf 1.39.3.
func TestNullDelimiter(t *testing.T) {
	p := newParser(t, csv.Options{Delimiter: "\u0000", ColumnNames: []string{"first", "second", "third"}})
	ms, err := collect(t, p, strings.Join([]string{"3.4", "70", "test_name"}, "\u0000")+"\n"+
		strings.Join([]string{"1", "2", "a,b"}, "\u0000"))
	require.NoError(t, err)
	require.Equal(t, "csv first=3.4,second=70i,third=\"test_name\" 3600000000000\n"+
		"csv first=1i,second=2i,third=\"a\ufffdb\" 3600000000000\n", testutil.Format(ms))
}

// TestParseLineEndings checks that ParseLine takes a line with or without its ending, as
// inputs that strip it and Telegraf's tests that keep it give them.
func TestParseLineEndings(t *testing.T) {
	p := newParser(t, csv.Options{HeaderRowCount: 1, SkipRows: 1})
	var ms []morse.Metric
	emit := func(m morse.Metric) { ms = append(ms, m) }
	for _, line := range []string{"skipped\r\n", "a,b\r\n", "1,x\r", "2,y\n", "3,z"} {
		require.NoError(t, p.ParseLine([]byte(line), emit))
	}
	require.Equal(t, "csv a=1i,b=\"x\" 3600000000000\ncsv a=2i,b=\"y\" 3600000000000\ncsv a=3i,b=\"z\" 3600000000000\n",
		testutil.Format(ms))
}

// TestRefusedCount checks that every refused row is counted although only the first
// parsers.MaxKept are quoted, and that the good rows between them are kept.
func TestRefusedCount(t *testing.T) {
	p := newParser(t, csv.Options{ColumnNames: []string{"v"}, ColumnTypes: []string{"int"}})
	var b strings.Builder
	for i := range 25 {
		if i%2 == 0 {
			b.WriteString("bad\n")
		} else {
			b.WriteString("1\n")
		}
	}
	ms, err := collect(t, p, b.String())
	require.Len(t, ms, 12)
	var pe *parsers.Error
	require.True(t, errors.As(err, &pe))
	require.Equal(t, 13, pe.Refused)
	require.Equal(t, 13, parsers.Refused(err))
	require.Len(t, pe.Entries, parsers.MaxKept)
	require.Equal(t, 1, pe.Entries[0].Line)
	require.Equal(t, 19, pe.Entries[parsers.MaxKept-1].Line)
}

// TestConcurrentParse is Telegraf's TestConcurrentParsing: with csv_reset_mode "always"
// one parser serves several goroutines, each payload read whole.
func TestConcurrentParse(t *testing.T) {
	p := newParser(t, csv.Options{HeaderRowCount: 1, TimestampColumn: "timestamp", TimestampFormat: "unix",
		TagColumns: []string{"tags_host", "tags_platform", "tags_sdkver"}, ResetMode: csv.ResetAlways})
	const data = "tags_host,tags_platform,tags_sdkver,value,timestamp\n" +
		"myhost,python,3.11.5,5,1653643420\nmyhost,python,3.11.4,4,1653643420\n"
	var wg sync.WaitGroup
	counts := make([]int, 8)
	for g := range counts {
		wg.Go(func() {
			for range 20 {
				err := p.Parse([]byte(data), func(m morse.Metric) {
					if len(m.Tags()) == 3 && len(m.Fields()) == 1 {
						counts[g]++
					}
				})
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, n := range counts {
		require.Equal(t, 40, n)
	}
}

// TestSkipColumnsBeyondHeader checks that csv_skip_columns larger than the header leaves
// no column, so that rows are refused for having no fields (Telegraf panics).
func TestSkipColumnsBeyondHeader(t *testing.T) {
	p := newParser(t, csv.Options{HeaderRowCount: 1, SkipColumns: 5})
	ms, err := collect(t, p, "a,b\n1,2\n")
	require.Empty(t, ms)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Refused)
	require.ErrorIs(t, pe.Entries[0], csv.ErrNoFields)
}

// TestNamedTimestampLayouts: csv_timestamp_format may name a layout of the time package in
// any case, as in Telegraf, and the unix formats count from the epoch in their unit.
func TestNamedTimestampLayouts(t *testing.T) {
	want := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for format, stamp := range map[string]string{
		"RFC3339":             "2024-05-06T07:08:09Z",
		"rfc1123":             "Mon, 06 May 2024 07:08:09 UTC",
		"stampnano":           "May  6 07:08:09.000000000",
		"unix_ms":             "1714979289000",
		"2006-01-02T15:04:05": "2024-05-06T07:08:09",
	} {
		p := newParser(t, csv.Options{ColumnNames: []string{"t", "v"}, TimestampColumn: "t", TimestampFormat: format})
		ms, err := collect(t, p, `"`+stamp+`",1`+"\n")
		require.NoError(t, err, format)
		require.Len(t, ms, 1, format)
		if format == "stampnano" { // no year: year 0
			want := time.Date(0, 5, 6, 7, 8, 9, 0, time.UTC)
			require.Equal(t, want, ms[0].Time().UTC(), format)
			continue
		}
		require.Equal(t, want, ms[0].Time().UTC(), format)
	}
}
