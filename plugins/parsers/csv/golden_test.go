package csv_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/csv"
)

// defaultTime is the time of rows without a timestamp column, as in Telegraf's tests.
var defaultTime = time.Unix(3600, 0)

// section is one "-- name --" part of a case file.
type section struct{ name, body string }

// sections splits a case file into its parts; text before the first is a comment.
func sections(text string) []section {
	var out []section
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
			out = append(out, section{name: strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].body += line
		}
	}
	return out
}

// TestGolden runs each case of testdata/cases: its config, then each "parse" part as one
// Parse call and each "lines" part as one ParseLine call per line, in order, on one parser.
// The "output" part holds what each call emitted, as line protocol, and what it refused.
// The inputs and expected metrics are Telegraf 1.39.3's csv parser tests and README
// examples (the names say which), and morse's own cases of refused rows.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			text := string(raw)
			head, _, ok := strings.Cut(text, "-- output --\n")
			require.True(t, ok, "a case ends with an output part")
			testutil.Golden(t, file, []byte(head+"-- output --\n"+runCase(t, sections(head))))
		})
	}
}

func runCase(t *testing.T, parts []section) string {
	var o csv.Options
	require.Equal(t, "config", parts[0].name)
	md, err := toml.Decode(parts[0].body, &o)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys the csv format does not take")
	p, err := csv.New(o, parsers.Settings{MetricName: "csv", Now: func() time.Time { return defaultTime }})
	require.NoError(t, err)

	var out strings.Builder
	for i, part := range parts[1:] {
		var ms []morse.Metric
		emit := func(m morse.Metric) { ms = append(ms, m) }
		var refused []string
		switch part.name {
		case "parse":
			refused = refusals(p.Parse([]byte(part.body), emit))
		case "lines":
			lines := strings.Split(strings.TrimSuffix(part.body, "\n"), "\n")
			for k, line := range lines {
				for _, r := range refusals(p.ParseLine([]byte(line), emit)) {
					refused = append(refused, fmt.Sprintf("ParseLine %d: %s", k+1, r))
				}
			}
		default:
			t.Fatalf("unknown part %q", part.name)
		}
		fmt.Fprintf(&out, "# %d: %s, %d metrics, %d refused\n", i+1, part.name, len(ms), len(refused))
		out.WriteString(testutil.Format(ms))
		for _, r := range refused {
			fmt.Fprintf(&out, "! %s\n", r)
		}
	}
	return out.String()
}

// refusals lists what a call refused, one entry each; it fails on an error that is not a
// *parsers.Error, which a parser never returns.
func refusals(err error) []string {
	if err == nil {
		return nil
	}
	var pe *parsers.Error
	if !errors.As(err, &pe) {
		panic(fmt.Sprintf("not a *parsers.Error: %v", err))
	}
	out := make([]string, 0, len(pe.Entries))
	for _, e := range pe.Entries {
		out = append(out, e.Error())
	}
	if pe.Refused != len(pe.Entries) {
		out = append(out, fmt.Sprintf("(%d more)", pe.Refused-len(pe.Entries)))
	}
	return out
}
