package loadgen

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// parsePool renders every line of the pool with timestamps from base and parses them with
// morse's own parser, failing the test on any refused line.
func parsePool(t *testing.T, p *Pool, base int64) []morse.Metric {
	t.Helper()
	data := p.AppendLines(nil, 0, p.Len(), base)
	var got []morse.Metric
	var parser influx.Parser
	res := parser.Parse(data, func(m morse.Metric) { got = append(got, m) })
	require.NoError(t, res.Err())
	require.Equal(t, p.Len(), res.Metrics)
	return got
}

func TestGeneratedLinesParse(t *testing.T) {
	p, err := Generate(GenOptions{Seed: 7, Hosts: 50, Lines: 20000})
	require.NoError(t, err)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	metrics := parsePool(t, p, base)
	for i, m := range metrics {
		require.Equal(t, base+int64(i), m.Time().UnixNano(), "line %d keeps its timestamp", i)
	}
}

// TestGeneratedLinesCoverTypesAndEscapes checks that the pool exercises everything a
// receiver must handle: all five field types, the escaped characters of names, tag values
// and strings, and the whole range of tag and field counts.
func TestGeneratedLinesCoverTypesAndEscapes(t *testing.T) {
	p, err := Generate(GenOptions{Seed: 1, Hosts: 1000, Lines: 20000})
	require.NoError(t, err)
	types := map[morse.ValueType]int{}
	tagCounts, fieldCounts := map[int]int{}, map[int]int{}
	var tagEsc, strEsc, nameEsc = map[byte]int{}, map[byte]int{}, 0
	hosts := map[string]bool{}
	for _, m := range parsePool(t, p, 1) {
		tagCounts[len(m.Tags())]++
		fieldCounts[len(m.Fields())]++
		if strings.Contains(m.Name(), " ") {
			nameEsc++
		}
		for _, tag := range m.Tags() {
			for _, c := range []byte(" ,=") {
				if strings.IndexByte(tag.Value, c) >= 0 {
					tagEsc[c]++
				}
			}
			if tag.Key == "host" {
				hosts[tag.Value] = true
			}
		}
		for _, f := range m.Fields() {
			types[f.Value.Type()]++
			if f.Value.Type() == morse.TypeString {
				for _, c := range []byte(`"\`) {
					if strings.IndexByte(f.Value.Str(), c) >= 0 {
						strEsc[c]++
					}
				}
			}
		}
	}
	for _, typ := range []morse.ValueType{morse.TypeFloat, morse.TypeInt, morse.TypeUint, morse.TypeString, morse.TypeBool} {
		require.Positive(t, types[typ], "field type %s", typ)
	}
	for _, c := range []byte(" ,=") {
		require.Positive(t, tagEsc[c], "tag values with %q", c)
	}
	require.Positive(t, strEsc['"'], "strings with a quote")
	require.Positive(t, strEsc['\\'], "strings with a backslash")
	require.Positive(t, nameEsc, "a measurement name with a space")
	for n := 2; n <= 6; n++ {
		require.Positive(t, tagCounts[n], "lines with %d tags", n)
	}
	for n := 1; n <= 8; n++ {
		require.Positive(t, fieldCounts[n], "lines with %d fields", n)
	}
	require.Len(t, tagCounts, 5, "tag counts outside 2..6: %v", tagCounts)
	require.Len(t, fieldCounts, 8, "field counts outside 1..8: %v", fieldCounts)
	require.Greater(t, len(hosts), 900, "most of the 1000 hosts appear")
}

func TestGenerateIsDeterministic(t *testing.T) {
	opts := GenOptions{Seed: 42, Hosts: 100, Lines: 5000}
	a, err := Generate(opts)
	require.NoError(t, err)
	b, err := Generate(opts)
	require.NoError(t, err)
	require.Equal(t, a.AppendLines(nil, 0, a.Len(), 0), b.AppendLines(nil, 0, b.Len(), 0))

	opts.Seed = 43
	c, err := Generate(opts)
	require.NoError(t, err)
	require.NotEqual(t, a.AppendLines(nil, 0, a.Len(), 0), c.AppendLines(nil, 0, c.Len(), 0))
}

func TestNoUintWritesIntegers(t *testing.T) {
	p, err := Generate(GenOptions{Seed: 3, Hosts: 10, Lines: 3000, NoUint: true})
	require.NoError(t, err)
	ints := 0
	for _, m := range parsePool(t, p, 1) {
		for _, f := range m.Fields() {
			require.NotEqual(t, morse.TypeUint, f.Value.Type(), "%s.%s", m.Name(), f.Key)
			if f.Value.Type() == morse.TypeInt {
				ints++
			}
		}
	}
	require.Positive(t, ints)
}

func TestAppendLinesCyclesThroughThePool(t *testing.T) {
	p, err := Generate(GenOptions{Seed: 1, Hosts: 1, Lines: 3})
	require.NoError(t, err)
	out := strings.Split(strings.TrimSuffix(string(p.AppendLines(nil, 2, 4, 100)), "\n"), "\n")
	require.Len(t, out, 4)
	want := []string{
		string(p.Line(2)) + " 102", string(p.Line(0)) + " 103",
		string(p.Line(1)) + " 104", string(p.Line(2)) + " 105",
	}
	require.Equal(t, want, out)
}

func TestCountedMeasurementsAreOnEveryLine(t *testing.T) {
	p, err := Generate(GenOptions{Seed: 9, Hosts: 10, Lines: 5000})
	require.NoError(t, err)
	counted := map[string]string{}
	for _, cm := range p.Measurements() {
		counted[cm.Name] = cm.Field
	}
	require.Len(t, counted, len(measurements))
	for _, m := range parsePool(t, p, 1) {
		field, ok := counted[m.Name()]
		require.True(t, ok, m.Name())
		_, has := m.Field(field)
		require.True(t, has, "%s lacks %s", m.Name(), field)
	}
}

func TestGenerateRefusesBadOptions(t *testing.T) {
	_, err := Generate(GenOptions{Hosts: 1, Lines: 0})
	require.Error(t, err)
	_, err = Generate(GenOptions{Hosts: 0, Lines: 10})
	require.Error(t, err)
}

// TestGenerateStatsd checks the statsd pool: counter increments of 1, sent without a
// timestamp.
func TestGenerateStatsd(t *testing.T) {
	p, err := GenerateStatsd(GenOptions{Seed: 1, Hosts: 10, Lines: 100})
	require.NoError(t, err)
	out := string(p.AppendLines(nil, 0, 3, 1000))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines {
		require.Regexp(t, `^bench\.m\d\d,host=host-000\d\d:1\|c$`, l)
	}
}

// TestGenerateSyslog checks the syslog pool: RFC 5424 messages, each octet-counted, back to
// back with nothing between them.
func TestGenerateSyslog(t *testing.T) {
	p, err := GenerateSyslog(GenOptions{Seed: 1, Hosts: 10, Lines: 100})
	require.NoError(t, err)
	out := p.AppendLines(nil, 99, 3, 1000)
	for i := range 3 {
		n, rest, ok := strings.Cut(string(out), " ")
		require.True(t, ok)
		size, err := strconv.Atoi(n)
		require.NoError(t, err)
		require.Regexp(t, `^<\d+>1 2024-05-01T12:00:\d\d\.\d{6}Z host-0000\d app-\d \d+ ID\d+ - request \d+ served in \d+ ms$`, rest[:size], "message %d", i)
		out = []byte(rest[size:])
	}
	require.Empty(t, out, "no trailer after the last frame")
	_, err = GenerateSyslog(GenOptions{Hosts: 1, Lines: 0})
	require.Error(t, err)
}
