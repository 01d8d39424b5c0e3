package graphite_test

import (
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/serializers/graphite"
)

var ts = time.Unix(1234567890, 0)

func metric(name string, tags map[string]string, fields ...morse.Field) morse.Metric {
	var tl []morse.Tag
	for k, v := range tags {
		tl = append(tl, morse.Tag{Key: k, Value: v})
	}
	return morse.NewMetric(name, tl, fields, ts)
}

func f(k string, v any) morse.Field {
	val, ok := morse.ValueOf(v)
	if !ok {
		panic(v)
	}
	return morse.Field{Key: k, Value: val}
}

var cpuTags = map[string]string{"host": "localhost", "cpu": "cpu0", "datacenter": "us-west-2"}
var usage = []morse.Field{f("usage_idle", 91.5), f("usage_busy", 8.5)}

// lines serializes m and returns its lines sorted, as Telegraf's tests compare them.
func lines(t *testing.T, o graphite.Options, ms ...morse.Metric) []string {
	t.Helper()
	s, err := graphite.New(o)
	require.NoError(t, err)
	var out []string
	for _, m := range ms {
		b, err := s.AppendMetric(nil, m)
		if err != nil {
			require.Empty(t, b)
			continue
		}
		out = append(out, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	slices.Sort(out)
	return out
}

// TestTelegrafCases are the cases of Telegraf 1.39.3's graphite serializer tests
// (plugins/serializers/graphite/graphite_test.go) with their expected lines.
func TestTelegrafCases(t *testing.T) {
	tagSupport := graphite.Options{TagSupport: true, Separator: "."}
	cases := []struct {
		name string
		o    graphite.Options
		ms   []morse.Metric
		want []string
	}{
		{"no host", graphite.Options{}, []morse.Metric{metric("cpu", map[string]string{"cpu": "cpu0", "datacenter": "us-west-2"}, usage...)},
			[]string{"cpu0.us-west-2.cpu.usage_busy 8.5 1234567890", "cpu0.us-west-2.cpu.usage_idle 91.5 1234567890"}},
		{"no host tag support", tagSupport, []morse.Metric{metric("cpu", map[string]string{"cpu": "cpu0", "datacenter": "us-west-2"}, usage...)},
			[]string{"cpu.usage_busy;cpu=cpu0;datacenter=us-west-2 8.5 1234567890", "cpu.usage_idle;cpu=cpu0;datacenter=us-west-2 91.5 1234567890"}},
		{"host", graphite.Options{}, []morse.Metric{metric("cpu", cpuTags, usage...)},
			[]string{"localhost.cpu0.us-west-2.cpu.usage_busy 8.5 1234567890", "localhost.cpu0.us-west-2.cpu.usage_idle 91.5 1234567890"}},
		{"multiple templates", graphite.Options{Templates: []string{"cp* tags.measurement.host.field", "new_cpu tags.host.measurement.field"}},
			[]morse.Metric{metric("cpu", cpuTags, usage...), metric("new_cpu", cpuTags, usage...)},
			[]string{"cpu0.us-west-2.cpu.localhost.usage_busy 8.5 1234567890", "cpu0.us-west-2.cpu.localhost.usage_idle 91.5 1234567890",
				"cpu0.us-west-2.localhost.new_cpu.usage_busy 8.5 1234567890", "cpu0.us-west-2.localhost.new_cpu.usage_idle 91.5 1234567890"}},
		{"multiple templates with default", graphite.Options{Templates: []string{"cp* tags.measurement.host.field", "tags.host.measurement.field"}},
			[]morse.Metric{metric("cpu", cpuTags, usage...), metric("new_cpu", cpuTags, usage...)},
			[]string{"cpu0.us-west-2.cpu.localhost.usage_busy 8.5 1234567890", "cpu0.us-west-2.cpu.localhost.usage_idle 91.5 1234567890",
				"cpu0.us-west-2.localhost.new_cpu.usage_busy 8.5 1234567890", "cpu0.us-west-2.localhost.new_cpu.usage_idle 91.5 1234567890"}},
		{"host tag support", tagSupport, []morse.Metric{metric("cpu", cpuTags, usage...)},
			[]string{"cpu.usage_busy;cpu=cpu0;datacenter=us-west-2;host=localhost 8.5 1234567890", "cpu.usage_idle;cpu=cpu0;datacenter=us-west-2;host=localhost 91.5 1234567890"}},
		{"value field", graphite.Options{}, []morse.Metric{metric("cpu", cpuTags, f("value", 91.5))}, []string{"localhost.cpu0.us-west-2.cpu 91.5 1234567890"}},
		{"value field tag support", tagSupport, []morse.Metric{metric("cpu", cpuTags, f("value", 91.5))}, []string{"cpu;cpu=cpu0;datacenter=us-west-2;host=localhost 91.5 1234567890"}},
		{"value field in the middle", graphite.Options{Template: "host.field.tags.measurement"}, []morse.Metric{metric("cpu", cpuTags, f("value", 91.5))}, []string{"localhost.cpu0.us-west-2.cpu 91.5 1234567890"}},
		{"value field first", graphite.Options{Template: "field.host.tags.measurement"}, []morse.Metric{metric("cpu", cpuTags, f("value", 91.5))}, []string{"localhost.cpu0.us-west-2.cpu 91.5 1234567890"}},
		{"value field template5", graphite.Options{Template: "host.datacenter.cpu.tags.measurement.field"}, []morse.Metric{metric("cpu", cpuTags, f("value", 91.5))}, []string{"localhost.us-west-2.cpu0.cpu 91.5 1234567890"}},
		{"string value", graphite.Options{Template: "host.field.tags.measurement"}, []morse.Metric{metric("cpu", cpuTags, f("value", "asdasd"))}, nil},
		{"string value tag support", tagSupport, []morse.Metric{metric("cpu", cpuTags, f("value", "asdasd"))}, nil},
		{"booleans", graphite.Options{Template: "host.field.tags.measurement"}, []morse.Metric{metric("cpu", cpuTags, f("enabled", true), f("disabled", false))},
			[]string{"localhost.disabled.cpu0.us-west-2.cpu 0 1234567890", "localhost.enabled.cpu0.us-west-2.cpu 1 1234567890"}},
		{"booleans tag support", tagSupport, []morse.Metric{metric("cpu", cpuTags, f("enabled", true), f("disabled", false))},
			[]string{"cpu.disabled;cpu=cpu0;datacenter=us-west-2;host=localhost 0 1234567890", "cpu.enabled;cpu=cpu0;datacenter=us-west-2;host=localhost 1 1234567890"}},
		{"unsigned", graphite.Options{}, []morse.Metric{morse.NewMetric("mem", nil, []morse.Field{f("free", uint64(42))}, time.Unix(0, 0))}, []string{".mem.free 42 0"}},
		{"field with spaces", graphite.Options{Template: "host.tags.measurement.field"}, []morse.Metric{metric("cpu", cpuTags, f(`field\ with\ spaces`, 91.5))},
			[]string{"localhost.cpu0.us-west-2.cpu.field_with_spaces 91.5 1234567890"}},
		{"field with spaces tag support", tagSupport, []morse.Metric{metric("cpu", cpuTags, f(`field\ with\ spaces`, 91.5))},
			[]string{"cpu.field_with_spaces;cpu=cpu0;datacenter=us-west-2;host=localhost 91.5 1234567890"}},
		{"tag with spaces", graphite.Options{Template: "host.tags.measurement.field"}, []morse.Metric{metric("cpu", map[string]string{"host": "localhost", "cpu": `cpu\ 0`, "datacenter": "us-west-2"}, f("field_with_spaces", 91.5))},
			[]string{"localhost.cpu_0.us-west-2.cpu.field_with_spaces 91.5 1234567890"}},
		{"tag with spaces tag support", tagSupport, []morse.Metric{metric("cpu", map[string]string{"host": "localhost", "cpu": `cpu\ 0`, "datacenter": "us-west-2"}, f("field_with_spaces", 91.5))},
			[]string{"cpu.field_with_spaces;cpu=cpu_0;datacenter=us-west-2;host=localhost 91.5 1234567890"}},
		{"tag with spaces compatible", graphite.Options{TagSupport: true, TagSanitizeMode: "compatible", Separator: "."}, []morse.Metric{metric("cpu", map[string]string{"host": "localhost", "cpu": `cpu\ 0`, "datacenter": "us-west-2"}, f("field_with_spaces", 91.5))},
			[]string{`cpu.field_with_spaces;cpu=cpu\ 0;datacenter=us-west-2;host=localhost 91.5 1234567890`}},
		{"prefix", graphite.Options{Prefix: "prefix"}, []morse.Metric{metric("cpu", cpuTags, usage...)},
			[]string{"prefix.localhost.cpu0.us-west-2.cpu.usage_busy 8.5 1234567890", "prefix.localhost.cpu0.us-west-2.cpu.usage_idle 91.5 1234567890"}},
		{"prefix tag support", graphite.Options{Prefix: "prefix", TagSupport: true, Separator: "."}, []morse.Metric{metric("cpu", cpuTags, usage...)},
			[]string{"prefix.cpu.usage_busy;cpu=cpu0;datacenter=us-west-2;host=localhost 8.5 1234567890", "prefix.cpu.usage_idle;cpu=cpu0;datacenter=us-west-2;host=localhost 91.5 1234567890"}},
		{"separator tag support", graphite.Options{TagSupport: true, Separator: "_"}, []morse.Metric{metric("cpu", map[string]string{"cpu": "cpu-total", "dc": "us-east-1", "host": "tars"}, f("usage_idle", 98.09), f("usage_user", 0.89))},
			[]string{"cpu_usage_idle;cpu=cpu-total;dc=us-east-1;host=tars 98.09 1234567890", "cpu_usage_user;cpu=cpu-total;dc=us-east-1;host=tars 0.89 1234567890"}},
		{"custom regex", graphite.Options{StrictRegex: `[^a-zA-Z0-9-:._=|\p{L}]`}, []morse.Metric{metric("cpu", map[string]string{"host": "localhost", "cpu": "cpu0", "datacenter": "|us-west-2|"}, f("value", 91.5))},
			[]string{"localhost.cpu0.|us-west-2|.cpu 91.5 1234567890"}},
		{"template1", graphite.Options{Template: "tags.measurement.field"}, []morse.Metric{metric("cpu", cpuTags, f("usage_idle", 91.5))}, []string{"cpu0.us-west-2.localhost.cpu.usage_idle 91.5 1234567890"}},
		{"template2", graphite.Options{Template: "host.measurement.field"}, []morse.Metric{metric("cpu", cpuTags, f("usage_idle", 91.5))}, []string{"localhost.cpu.usage_idle 91.5 1234567890"}},
		{"template3", graphite.Options{Template: "host.tags.field"}, []morse.Metric{metric("cpu", cpuTags, f("usage_idle", 91.5))}, []string{"localhost.cpu0.us-west-2.usage_idle 91.5 1234567890"}},
		{"template4", graphite.Options{Template: "host.tags.measurement"}, []morse.Metric{metric("cpu", cpuTags, f("usage_idle", 91.5))}, []string{"localhost.cpu0.us-west-2.cpu 91.5 1234567890"}},
		{"template6", graphite.Options{Template: "foo.host.cpu.bar.tags.measurement.field"}, []morse.Metric{metric("cpu", cpuTags, f("usage_idle", 91.5))}, []string{"localhost.cpu0.us-west-2.cpu.usage_idle 91.5 1234567890"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, lines(t, tc.o, tc.ms...))
		})
	}
}

// TestClean is Telegraf's TestClean, TestCleanWithTagsSupport and
// TestCleanWithTagsSupportCompatibleSanitize: one metric, three modes.
func TestClean(t *testing.T) {
	type want struct{ plain, tags, compatible string }
	cases := []struct {
		name   string
		metric string
		tags   map[string]string
		field  morse.Field
		want   want
	}{
		{"base", "cpu", map[string]string{"host": "localhost"}, f("usage_busy", 8.5), want{
			"localhost.cpu.usage_busy 8.5 1234567890", "cpu.usage_busy;host=localhost 8.5 1234567890", "cpu.usage_busy;host=localhost 8.5 1234567890"}},
		{"dot and whitespace in tags", "cpu", map[string]string{"host": "localhost", "label.dot and space": "value with.dot"}, f("usage_busy", 8.5), want{
			"localhost.value_with_dot.cpu.usage_busy 8.5 1234567890", "cpu.usage_busy;host=localhost;label.dot_and_space=value_with.dot 8.5 1234567890",
			"cpu.usage_busy;host=localhost;label.dot and space=value with.dot 8.5 1234567890"}},
		{"string field", "system", map[string]string{"host": "localhost"}, f("uptime_format", "20 days, 23:26"), want{}},
		{"allowed punct", "cpu", map[string]string{"host": "localhost", "tag": "-_:="}, f("usage_busy", int64(10)), want{
			"localhost.-_:=.cpu.usage_busy 10 1234567890", "cpu.usage_busy;host=localhost;tag=-_:= 10 1234567890", "cpu.usage_busy;host=localhost;tag=-_:= 10 1234567890"}},
		{"compatible punct", "cpu", map[string]string{"host": "localhost", "tag": "-_:=!^~"}, f("usage_busy", int64(10)), want{
			"localhost.-_:=___.cpu.usage_busy 10 1234567890", "cpu.usage_busy;host=localhost;tag=-_:=___ 10 1234567890", "cpu.usage_busy;host=localhost;tag=-_:=!^~ 10 1234567890"}},
		{"hyphens", "cpu", map[string]string{"host": "localhost", "tag": "/@*"}, f("usage_busy", int64(10)), want{
			"localhost.---.cpu.usage_busy 10 1234567890", "cpu.usage_busy;host=localhost;tag=--- 10 1234567890", "cpu.usage_busy;host=localhost;tag=/@* 10 1234567890"}},
		{"backslash", "cpu", map[string]string{"host": "localhost", "tag": `\no slash`}, f("usage_busy", int64(10)), want{
			"localhost.no_slash.cpu.usage_busy 10 1234567890", "cpu.usage_busy;host=localhost;tag=no_slash 10 1234567890", `cpu.usage_busy;host=localhost;tag=\no slash 10 1234567890`}},
		{"value field", "cpu", map[string]string{"host": "localhost"}, f("value", int64(10)), want{
			"localhost.cpu 10 1234567890", "cpu;host=localhost 10 1234567890", "cpu;host=localhost 10 1234567890"}},
		{"unicode letters", "cpu", map[string]string{"host": "localhost", "tag": "μnicodε_letters"}, f("value", int64(10)), want{
			"localhost.μnicodε_letters.cpu 10 1234567890", "cpu;host=localhost;tag=μnicodε_letters 10 1234567890", "cpu;host=localhost;tag=μnicodε_letters 10 1234567890"}},
		{"other unicode", "cpu", map[string]string{"host": "localhost", "tag": "“☢”"}, f("value", int64(10)), want{
			"localhost.___.cpu 10 1234567890", "cpu;host=localhost;tag=___ 10 1234567890", "cpu;host=localhost;tag=___ 10 1234567890"}},
		{"newlines", "cpu", map[string]string{"host": "localhost", "label": "some\nthing\nwith\nnewline"}, f("usage_busy", 8.5), want{
			"localhost.some_thing_with_newline.cpu.usage_busy 8.5 1234567890", "cpu.usage_busy;host=localhost;label=some_thing_with_newline 8.5 1234567890",
			"cpu.usage_busy;host=localhost;label=some_thing_with_newline 8.5 1234567890"}},
		{"name tag and tilde", "cpu", map[string]string{"name": "~~x", "host": "h"}, f("v", 1.25), want{
			"h.__x.cpu.v 1.25 1234567890", "cpu.v;_name=__x;host=h 1.25 1234567890", "cpu.v;_name=x;host=h 1.25 1234567890"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := metric(tc.metric, tc.tags, tc.field)
			for _, c := range []struct {
				o graphite.Options
				w string
			}{
				{graphite.Options{}, tc.want.plain},
				{graphite.Options{TagSupport: true}, tc.want.tags},
				{graphite.Options{TagSupport: true, TagSanitizeMode: "compatible"}, tc.want.compatible},
			} {
				o, w := c.o, c.w
				var want []string
				if w != "" {
					want = []string{w}
				}
				require.Equal(t, want, lines(t, o, m), "%+v", o)
			}
		})
	}
}

// TestNothingWritable: a metric with no field Graphite takes, or no path, is refused as a
// whole with a permanent serialize error, so that the output counts it; skipped fields are
// counted.
func TestNothingWritable(t *testing.T) {
	s, err := graphite.New(graphite.Options{})
	require.NoError(t, err)
	m := metric("m", nil, f("s", "text"), f("nan", math.NaN()), f("inf", math.Inf(1)))
	out, err := s.AppendMetric([]byte("keep"), m)
	require.Equal(t, "keep", string(out))
	var pe *morse.PermanentError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, morse.ReasonSerialize, pe.Reason)
	require.ErrorIs(t, err, graphite.ErrNoFields)
	require.Equal(t, int64(3), s.SkippedFields())

	s, err = graphite.New(graphite.Options{Template: "nosuchtag"})
	require.NoError(t, err)
	_, err = s.AppendMetric(nil, metric("m", nil, f("v", 1.0)))
	require.ErrorIs(t, err, graphite.ErrNoPath)
	out, dropped := s.AppendBatch(nil, []morse.Metric{metric("m", nil, f("v", 1.0)), metric("m", map[string]string{"nosuchtag": "x"}, f("v", 1.0))})
	require.Equal(t, 1, dropped)
	require.Equal(t, "x 1 1234567890\n", string(out), "a template without field writes none")
}

func TestValidate(t *testing.T) {
	o := graphite.Options{
		Templates:       []string{"", "a b c", "[ measurement"},
		TagSanitizeMode: "loose",
		StrictRegex:     "[",
	}
	err := o.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"templates: missing template at position: 0",
		`templates: invalid template format: "a b c"`,
		"templates: template 3:",
		`graphite_tag_sanitize_mode: must be "strict" or "compatible", not "loose"`,
		`graphite_strict_sanitize_regex: invalid regex provided "["`,
	} {
		require.ErrorContains(t, err, want)
	}
	var fe *morse.FieldError
	require.ErrorAs(t, err, &fe)
}

// TestSanitizeClasses holds the fast sanitizing to Telegraf's regular expressions on
// random text of ASCII, letters, other runes and invalid bytes: the default strict class
// against the same class given as a custom regex (which takes the regexp path).
func TestSanitizeClasses(t *testing.T) {
	fast, err := graphite.New(graphite.Options{Template: "measurement"})
	require.NoError(t, err)
	slow, err := graphite.New(graphite.Options{Template: "measurement", StrictRegex: `[^a-zA-Z0-9-:._=\p{L}\x{10FFFF}]`})
	require.NoError(t, err)
	re := regexp.MustCompile(`[^a-zA-Z0-9-:._=\p{L}]`)
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Z", "0", ".", "..", "\\", "/", "@", "*", " ", ";", "=", "-", "μ", "ε", "☢", "“", "\xff", "\xe2\x98", "\uFFFD", "~", "_", "\n"}
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) + 1 {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		name := b.String()
		m := morse.NewMetric(name, nil, []morse.Field{f("value", 1.0)}, ts)
		a, errA := fast.AppendMetric(nil, m)
		c, errC := slow.AppendMetric(nil, m)
		require.Equal(t, errA == nil, errC == nil)
		require.Equal(t, string(c), string(a), "%q", name)
		// And Telegraf's three steps spelled out.
		want := strings.NewReplacer("/", "-", "@", "-", "*", "-").Replace(name)
		want = strings.NewReplacer(`\`, "", "..", ".").Replace(want)
		want = re.ReplaceAllLiteralString(want, "_")
		if errA == nil {
			require.Equal(t, want+" 1 1234567890\n", string(a), "%q", name)
		}
	}
}

// TestGolden writes testutil.AllTypesMetric and a few others in each mode against a
// golden file.
func TestGolden(t *testing.T) {
	ms := []morse.Metric{
		testutil.AllTypesMetric(time.Unix(1700000000, 999999999)),
		metric("disk", map[string]string{"host": "h1", "path": "/var/lib", "name": "root"}, f("free", uint64(1<<40)), f("used_percent", 12.5)),
		metric("net", map[string]string{"host": "h.example.com", "interface": "eth0"}, f("bytes_recv", int64(-3)), f("value", 2.0)),
	}
	var out []byte
	for _, o := range []graphite.Options{{}, {Prefix: "telegraf", Templates: []string{"disk host.measurement.path.field", "n* measurement.tags.field"}},
		{TagSupport: true}, {TagSupport: true, TagSanitizeMode: "compatible", Separator: "_", Prefix: "p"}} {
		s, err := graphite.New(o)
		require.NoError(t, err)
		out = append(out, "# "+fmtOpts(o)+"\n"...)
		out, _ = s.AppendBatch(out, ms)
	}
	testutil.Golden(t, "testdata/serialized.golden", out)
}

func fmtOpts(o graphite.Options) string {
	var parts []string
	if o.Prefix != "" {
		parts = append(parts, "prefix="+o.Prefix)
	}
	if len(o.Templates) > 0 {
		parts = append(parts, "templates="+strings.Join(o.Templates, "|"))
	}
	if o.TagSupport {
		parts = append(parts, "graphite_tag_support")
	}
	if o.TagSanitizeMode != "" {
		parts = append(parts, "mode="+o.TagSanitizeMode)
	}
	if o.Separator != "" {
		parts = append(parts, "separator="+o.Separator)
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}
