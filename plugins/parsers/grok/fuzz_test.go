package grok_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/grok"
)

// fuzzPatterns exercise every kind of capture: the access log formats, each timestamp
// modifier and conversion.
var fuzzPatterns = []string{
	"%{COMBINED_LOG_FORMAT}",
	"%{COMMON_LOG_FORMAT}",
	"%{HTTPD_ERRORLOG}",
	`^%{NUMBER:ts:ts-epoch} %{NUMBER:f:float} %{BASE16NUM:i:int} %{NOTSPACE:d:duration} %{WORD:m:measurement}`,
	`^%{NUMBER:ts:ts-epochmilli} %{WORD:t:tag} %{GREEDYDATA:rest}`,
	`^%{NUMBER:ts:ts-epochnano} %{WORD:t:tag} %{GREEDYDATA:rest}`,
	`^%{SYSLOGTIMESTAMP:ts:ts-syslog} %{GREEDYDATA:rest}`,
	`^\[%{DATA:ts:ts}\] %{GREEDYDATA:rest}`,
	`^%{TIMESTAMP_ISO8601:ts:ts-"2006-01-02 15:04:05.000"} %{GREEDYDATA:rest}`,
	`^<%{NOTSPACE:ts:ts-"unix_ms"}> %{GREEDYDATA:rest}`,
}

// FuzzParse: no input panics the parser, every non-empty line is either a metric with
// fields or a refused entry, and every line of a refused entry's report is in the input.
func FuzzParse(f *testing.F) {
	for _, c := range testutil.Cases(f, "testdata/cases") {
		f.Add([]byte(c.In), false)
	}
	logs, _ := filepath.Glob("testdata/*.log")
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 2000)], true)
	}
	f.Add([]byte("0 1 0x10 5ms name\n1568540909963 t rest\nSep  2 09:01:55 x\n[Mon Jan  2 15:04:05 2006] y\n<1,5> z\n"), false)
	// The parsers are built once: compiling the patterns takes longer than most inputs.
	byLine, whole := fuzzParser(f, false), fuzzParser(f, true)
	f.Fuzz(func(t *testing.T, data []byte, multiline bool) {
		p := byLine
		if multiline {
			p = whole
		}
		metrics := 0
		err := p.Parse(data, func(m morse.Metric) {
			metrics++
			if len(m.Fields()) == 0 {
				t.Fatalf("a metric without fields from %q", data)
			}
		})
		entries := 0
		if multiline {
			entries = min(len(data), 1)
		} else {
			for line := range bytes.SplitSeq(data, []byte{'\n'}) {
				if len(bytes.TrimSuffix(line, []byte{'\r'})) > 0 {
					entries++
				}
			}
		}
		if metrics+parsers.Refused(err) != entries {
			t.Fatalf("%d metrics and %d refused of %d entries in %q: %v", metrics, parsers.Refused(err), entries, data, err)
		}
	})
}

func fuzzParser(f *testing.F, multiline bool) *grok.Parser {
	p, err := grok.New(grok.Options{GrokPatterns: fuzzPatterns, GrokMultiline: multiline}, parsers.Settings{MetricName: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	return p
}
