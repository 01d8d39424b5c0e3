// Processors and aggregators run against golden cases (RunProcessors, RunAggregators): a plugin's TOML
// settings, line protocol in, and the line protocol that must come out. Each case is one file
// under the plugin's testdata/ directory, so that a reader sees a whole example at once:
//
//	-- config --
//	[[processors.rename.replace]]
//	  tag = "hostname"
//	  dest = "host"
//	-- in --
//	cpu,hostname=a usage=1 1000000000
//	-- out --
//	cpu,host=a usage=1 1000000000
//
// The config section is the body of the plugin's table: the lines a user writes under
// [[processors.NAME]], with sub-tables named in full. Lines of the in section that start
// with "# " are directives (see Directive), other comments are ignored. `go test -update`
// (Update) rewrites the out sections from what the plugins produce.

package testutil

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	ser "github.com/morse-agent/morse/plugins/serializers/influx"
)

// Case is one golden file.
type Case struct {
	Name   string // the file name without its extension
	Path   string
	Config string
	In     string
	Out    string
}

var sectionRe = regexp.MustCompile(`(?m)^-- (config|in|out) --\n`)

// Cases reads every *.golden file in dir, sorted by name.
func Cases(t testing.TB, dir string) []Case {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.golden"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "golden cases in %s", dir)
	sort.Strings(paths)
	cases := make([]Case, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		c := Case{Name: strings.TrimSuffix(filepath.Base(p), ".golden"), Path: p}
		locs := sectionRe.FindAllSubmatchIndex(data, -1)
		require.Len(t, locs, 3, "%s: needs a config, an in and an out section", p)
		for i, loc := range locs {
			end := len(data)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			body := string(data[loc[1]:end])
			switch string(data[loc[2]:loc[3]]) {
			case "config":
				c.Config = body
			case "in":
				c.In = body
			case "out":
				c.Out = body
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// Check compares got with the case's out section: the file, with got in place of its out
// section, must be what it is (Golden, which rewrites it under -update).
func (c Case) Check(t testing.TB, got string) {
	t.Helper()
	data, err := os.ReadFile(c.Path)
	require.NoError(t, err)
	i := bytes.Index(data, []byte("-- out --\n"))
	require.GreaterOrEqual(t, i, 0)
	Golden(t, c.Path, append(data[:i:i], "-- out --\n"+got...))
}

// tableHeader matches a sub-table header that names the plugin's table, such as
// [[processors.rename.replace]], so that it can be made relative to the plugin.
var tableHeader = regexp.MustCompile(`(?m)^(\s*\[{1,2})\s*(?:processors|aggregators)\.[A-Za-z0-9_]+\.`)

// Decode decodes a case's config section into plugin, a pointer to the plugin's struct with
// its defaults set, and fails on keys that the plugin does not take, as the loader would.
func Decode(t testing.TB, config string, plugin any) {
	t.Helper()
	md, err := toml.Decode(tableHeader.ReplaceAllString(config, "$1"), plugin)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys the plugin does not take")
	if v, ok := plugin.(morse.Validator); ok {
		require.NoError(t, v.Validate())
	}
	if i, ok := plugin.(morse.Initializer); ok {
		require.NoError(t, i.Init())
	}
}

// Parse reads line protocol into metrics: plain ones, or with lines set, metrics held as
// their text (morse.NewLineMetric), as a listener hands them over when it can.
func Parse(t testing.TB, text string, lines bool) []morse.Metric {
	t.Helper()
	p := influx.Parser{Now: func() time.Time { return time.Unix(0, 0) }}
	if lines {
		p.LineMetrics = func() bool { return true }
	}
	var out []morse.Metric
	res := p.Parse([]byte(text), func(m morse.Metric) { out = append(out, m) })
	require.NoError(t, res.Err(), "input line protocol")
	return out
}

var serializer = ser.New(ser.Options{UintSupport: true})

// Format writes metrics as line protocol, one line each, in their order. A metric is expanded
// first, so that a line metric is written the way the same metric built from its parts
// would be. A metric that cannot be written, such as one left without fields, is shown as a
// comment with its name and tags.
func Format(ms []morse.Metric) string {
	var b []byte
	for _, m := range ms {
		m = m.Expanded()
		out, err := serializer.AppendMetric(b, m)
		if err != nil {
			b = fmt.Appendf(b, "# unwritable %s %v: %v\n", m.Name(), m.Tags(), err)
			continue
		}
		b = out
	}
	return string(b)
}
