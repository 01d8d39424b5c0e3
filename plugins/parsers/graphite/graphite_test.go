package graphite_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/graphite"
)

var now = time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)

func newParser(t testing.TB, o graphite.Options) *graphite.Parser {
	t.Helper()
	p, err := graphite.New(o, parsers.Settings{MetricName: "file", Now: func() time.Time { return now }})
	require.NoError(t, err)
	return p
}

// show is a metric as one line: name, tags and the field, with the time in seconds.
func show(m morse.Metric) string {
	var b strings.Builder
	b.WriteString(m.Name())
	for _, tg := range m.Tags() {
		fmt.Fprintf(&b, ",%s=%s", tg.Key, tg.Value)
	}
	for _, f := range m.Fields() {
		fmt.Fprintf(&b, " %s=%v", f.Key, f.Value.Interface())
	}
	fmt.Fprintf(&b, " %d", m.Time().Unix())
	return b.String()
}

// TestTelegrafCases are the cases of Telegraf 1.39.3's graphite parser and templating
// tests (plugins/parsers/graphite/parser_test.go, internal/templating/engine_test.go):
// templates, a line, and the metric Telegraf makes of it.
func TestTelegrafCases(t *testing.T) {
	cases := []struct {
		name      string
		separator string
		templates []string
		line      string
		want      string
	}{
		{"metric only", "", []string{"measurement"}, "cpu 1 100", "cpu value=1 100"},
		{"single series", "", []string{"measurement.hostname"}, "cpu.server01 1 100", "cpu,hostname=server01 value=1 100"},
		{"multiple series", "", []string{"measurement.region.hostname"}, "cpu.us-west.server01 1 100", "cpu,hostname=server01,region=us-west value=1 100"},
		{"tag named thrice", "", []string{"hostname.hostname.hostname.measurement.region"}, "server01.example.org.cpu.us-west 1 100", "cpu,hostname=server01.example.org,region=us-west value=1 100"},
		{"ignore unnamed", "", []string{"measurement"}, "foo.cpu 1 100", "foo value=1 100"},
		{"name shorter than template", "", []string{"measurement.A.B.C"}, "foo 1 100", "foo value=1 100"},
		{"wildcard measurement at end", "", []string{"env.zone.host.measurement*"}, "prod.us-west.server01.cpu.load 1 100", "cpu.load,env=prod,host=server01,zone=us-west value=1 100"},
		{"skip fields", "", []string{".zone..measurement*"}, "ignore.us-west.ignore-this-too.cpu.load 1 100", "cpu.load,zone=us-west value=1 100"},
		{"conjoined fields", "", []string{"env.zone.host.measurement.measurement.field*"}, "prod.us-west.server01.cpu.util.idle.percent 1 100", "cpu.util,env=prod,host=server01,zone=us-west idle.percent=1 100"},
		{"multiple fields", "", []string{"env.zone.host.measurement.measurement.field.field.reading"}, "prod.us-west.server01.cpu.util.idle.percent.free 1 100", "cpu.util,env=prod,host=server01,reading=free,zone=us-west idle.percent=1 100"},
		{"normal case", "", []string{"measurement.foo.bar"}, "cpu.foo.bar 50 100", "cpu,bar=bar,foo=foo value=50 100"},
		{"graphite tag", "", []string{"measurement.foo.bar"}, "cpu.foo.bar;tag1=value1 50 100", "cpu,bar=bar,foo=foo,tag1=value1 value=50 100"},
		{"wrong tag names", "", []string{"measurement.foo.bar"}, "cpu.foo.bar;tag!1=value1;tag^2=value2 50 100", "cpu,bar=bar,foo=foo value=50 100"},
		{"empty tag name", "", []string{"measurement.foo.bar"}, "cpu.foo.bar;=value1 50 100", "cpu,bar=bar,foo=foo value=50 100"},
		{"wrong tag value", "", []string{"measurement.foo.bar"}, "cpu.foo.bar;tag1=~value1 50 100", "cpu,bar=bar,foo=foo value=50 100"},
		{"empty tag value", "", []string{"measurement.foo.bar"}, "cpu.foo.bar;tag1= 50 100", "cpu,bar=bar,foo=foo value=50 100"},
		{"float value", "", []string{"measurement"}, "cpu 50.554 100", "cpu value=50.554 100"},
		{"NaN", "", []string{"measurement*"}, "servers.localhost.cpu_load NaN 1435077219", "servers.localhost.cpu_load value=NaN 1435077219"},
		{"Inf", "", []string{"measurement*"}, "servers.localhost.cpu_load +Inf 1435077219", "servers.localhost.cpu_load value=+Inf 1435077219"},
		{"filter match default", "", []string{"servers.localhost .host.measurement*"}, "miss.servers.localhost.cpu_load 11 1435077219", "miss.servers.localhost.cpu_load value=11 1435077219"},
		{"filter multiple measurement", "", []string{"servers.localhost .host.measurement.measurement*"}, "servers.localhost.cpu.cpu_load.10 11 1435077219", "cpu.cpu_load.10,host=localhost value=11 1435077219"},
		{"filter multiple measurement separator", "_", []string{"servers.localhost .host.measurement.measurement*"}, "servers.localhost.cpu.cpu_load.10 11 1435077219", "cpu_cpu_load_10,host=localhost value=11 1435077219"},
		{"filter single", "", []string{"servers.localhost .host.measurement*"}, "servers.localhost.cpu_load 11 1435077219", "cpu_load,host=localhost value=11 1435077219"},
		{"no match", "", []string{"servers.*.cpu .host.measurement.cpu.measurement"}, "servers.localhost.memory.VmallocChunk 11 1435077219", "servers.localhost.memory.VmallocChunk value=11 1435077219"},
		{"filter wildcard", "", []string{"servers.* .host.measurement*"}, "servers.localhost.cpu_load 11 1435077219", "cpu_load,host=localhost value=11 1435077219"},
		{"exact before wildcard", "", []string{"servers.* .wrong.measurement*", "servers.localhost .host.measurement*"}, "servers.localhost.cpu_load 11 1435077219", "cpu_load,host=localhost value=11 1435077219"},
		{"longest filter", "", []string{"*.* .wrong.measurement*", "servers.* .wrong.measurement*", "servers.localhost .wrong.measurement*", "servers.localhost.cpu .host.resource.measurement*", "*.localhost .wrong.measurement*"}, "servers.localhost.cpu.cpu_load 11 1435077219", "cpu_load,host=localhost,resource=cpu value=11 1435077219"},
		{"multiple wildcards", "", []string{"*.* .wrong.measurement*", "servers.* .host.measurement*", "servers.localhost .wrong.measurement*", "*.localhost .wrong.measurement*"}, "servers.server01.cpu_load 11 1435077219", "cpu_load,host=server01 value=11 1435077219"},
		{"template tags", "", []string{"servers.localhost .host.measurement* zone=1c"}, "servers.localhost.cpu_load 11 1435077219", "cpu_load,host=localhost,zone=1c value=11 1435077219"},
		{"template tags two", "", []string{"servers.localhost .host.measurement* zone=1c,region=us-east"}, "servers.localhost.cpu_load 11 1435077219", "cpu_load,host=localhost,region=us-east,zone=1c value=11 1435077219"},
		{"template white space", "", []string{"servers.localhost        .host.measurement*           zone=1c"}, "servers.localhost.cpu_load 11 1435077219", "cpu_load,host=localhost,zone=1c value=11 1435077219"},
		{"apply template", "_", []string{"current.* measurement.measurement"}, "current.users 1 100", "current_users value=1 100"},
		{"apply template no match", ".", []string{"foo.bar measurement.measurement"}, "current.users 1 100", "current.users value=1 100"},
		{"most specific filter", "_", []string{"current.* measurement.measurement", "current.*.* measurement.measurement.service"}, "current.users.facebook 1 100", "current_users,service=facebook value=1 100"},
		{"apply template tags", "_", []string{"current.* measurement.measurement region=us-west"}, "current.users 1 100", "current_users,region=us-west value=1 100"},
		{"apply template field", "_", []string{"current.* measurement.measurement.field"}, "current.users.logged_in 1 100", "current_users logged_in=1 100"},
		{"fields together", "_", []string{"current.* measurement.measurement.field.field"}, "current.users.logged_in.ssh 1 100", "current_users logged_in_ssh=1 100"},
		{"fields apart", "_", []string{"current.* measurement.measurement.field.method.field"}, "current.users.logged_in.ssh.total 1 100", "current_users,method=ssh logged_in_total=1 100"},
		{"greedy field", "_", []string{"current.* measurement.measurement.field*"}, "current.users.logged_in 1 100", "current_users logged_in=1 100"},
		{"over specific", ".", []string{"measurement.host.metric.metric.metric"}, "net.server001.a.b 2 100", "net,host=server001,metric=a.b value=2 100"},
		{"most specific default a", ".", []string{"measurement.host.metric", "measurement.host.metric.metric.metric", "measurement.host.metric.metric"}, "net.server001.a.b.c 2 100", "net,host=server001,metric=a.b.c value=2 100"},
		{"most specific default b", ".", []string{"measurement.host.metric", "measurement.host.metric.metric.metric", "measurement.host.metric.metric"}, "net.server001.a.b 2 100", "net,host=server001,metric=a.b value=2 100"},
		{"alternate separator", "_", []string{"/ /*/*/* /measurement/origin/measurement*"}, "/telegraf/host01/cpu 1 100", "telegraf_cpu,origin=host01 value=1 100"},
		{"wildcard template rule 1", ".", []string{
			"taskmanagerTask.alarm-detector.Assign.alarmDefinitionId metricsType.process.nodeId.x.alarmDefinitionId.measurement.field rule=1",
			"taskmanagerTask.*.*.*.*                                 metricsType.process.nodeId.measurement rule=2",
		}, "taskmanagerTask.alarm-detector.Assign.alarmDefinitionId.timeout_errors.duration.p75 1 100",
			"duration,alarmDefinitionId=timeout_errors,metricsType=taskmanagerTask,nodeId=Assign,process=alarm-detector,rule=1,x=alarmDefinitionId p75=1 100"},
		{"wildcard template rule 2", ".", []string{
			"taskmanagerTask.alarm-detector.Assign.alarmDefinitionId metricsType.process.nodeId.x.alarmDefinitionId.measurement.field rule=1",
			"taskmanagerTask.*.*.*.*                                 metricsType.process.nodeId.measurement rule=2",
		}, "taskmanagerTask.alarm-detector.Assign.numRecordsInPerSecond.m5_rate 1 100",
			"numRecordsInPerSecond,metricsType=taskmanagerTask,nodeId=Assign,process=alarm-detector,rule=2 value=1 100"},
		// BenchmarkParse's templates in Telegraf.
		{"benchmark", "_", benchTemplates, "servers.localhost.cpu.load 11 1435077219", "cpu_load,host=localhost value=11 1435077219"},
		{"fractional time", "", nil, "cpu 1 1435077219.75", "cpu value=1 1435077219"},
		{"now", "", nil, "cpu 1 -1", fmt.Sprintf("cpu value=1 %d", now.Unix())},
		{"no time", "", nil, "cpu 1", fmt.Sprintf("cpu value=1 %d", now.Unix())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newParser(t, graphite.Options{Separator: tc.separator, Templates: tc.templates})
			m, err := p.ParseLine(tc.line)
			require.NoError(t, err)
			require.Equal(t, tc.want, show(m))
		})
	}
	m, err := newParser(t, graphite.Options{}).ParseLine("cpu 1 1435077219.75")
	require.NoError(t, err)
	require.Equal(t, int64(750_000_000), int64(m.Time().Nanosecond()))
	require.True(t, math.IsNaN(must(newParser(t, graphite.Options{}).ParseLine("a NaN")).Fields()[0].Value.Float()))
}

func must(m morse.Metric, err error) morse.Metric {
	if err != nil {
		panic(err)
	}
	return m
}

var benchTemplates = []string{
	"*.* .wrong.measurement*",
	"servers.* .host.measurement*",
	"servers.localhost .host.measurement*",
	"*.localhost .host.measurement*",
	"*.*.cpu .host.measurement*",
	"a.b.c .host.measurement*",
	"influxd.*.foo .host.measurement*",
	"prod.*.mem .host.measurement*",
}

// TestRefusedLines are Telegraf's error cases, each between two good lines that are kept.
func TestRefusedLines(t *testing.T) {
	for _, tc := range []struct{ line, msg string }{
		{`1419972457825`, `received "1419972457825" which doesn't have required fields`},
		{`cpu 1 2 3`, `received "cpu 1 2 3" which doesn't have required fields`},
		{`cpu 50.554z 1419972457825`, `field "cpu" value: strconv.ParseFloat: parsing "50.554z": invalid syntax`},
		{`cpu 50z 1419972457825`, `field "cpu" value: strconv.ParseFloat: parsing "50z": invalid syntax`},
		{`cpu 50.554 14199724z57825`, `field "cpu" time: strconv.ParseFloat: parsing "14199724z57825": invalid syntax`},
		{`cpu 1 4102444800`, `timestamp out of range`},
	} {
		t.Run(tc.line, func(t *testing.T) {
			var ms []morse.Metric
			err := newParser(t, graphite.Options{}).Parse([]byte("a 1\n  "+tc.line+"  \n\nb 2"), func(m morse.Metric) { ms = append(ms, m) })
			var perr *parsers.Error
			require.True(t, errors.As(err, &perr))
			require.Equal(t, 1, perr.Refused)
			require.Equal(t, 2, perr.Entries[0].Line)
			require.Equal(t, tc.line, perr.Entries[0].Text)
			require.EqualError(t, perr.Entries[0].Err, tc.msg)
			require.Len(t, ms, 2)
		})
	}
}

// TestValidate reports every bad template of a config in one run, under "templates".
func TestValidate(t *testing.T) {
	o := graphite.Options{Templates: []string{
		"a.b.c",                       // no measurement (Telegraf's TestParseMissingMeasurement)
		"env.measurement*.field*",     // both greedy parts
		"servers.* measurement a=b=c", // bad tags
		"a b c d e",                   // too many words
		"  ",                          // skipped, as Telegraf does
		"servers.* .host.measurement*",
	}}
	err := o.Validate()
	var fe *morse.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "templates", fe.Key)
	for _, want := range []string{
		`no measurement specified for template. "a.b.c"`,
		`either 'field*' or 'measurement*' can be used in each template (but not both together): "env.measurement*.field*"`,
		`invalid template tags: "a=b=c"`,
		`invalid template format: "a b c d e"`,
	} {
		require.ErrorContains(t, err, want)
	}
	_, err = graphite.New(o, parsers.Settings{})
	require.Error(t, err)
	require.NoError(t, (&graphite.Options{Templates: benchTemplates}).Validate())
}

// TestGolden parses testdata/input.txt with testdata's templates against a golden file.
func TestGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/input.txt")
	require.NoError(t, err)
	p := newParser(t, graphite.Options{Separator: "_", Templates: []string{
		"servers.* .host.measurement*",
		"stats.*.*.* measurement.region.host.field region=eu",
		"carbon.agents.* ..host.measurement.field*",
	}})
	var b strings.Builder
	err = p.Parse(data, func(m morse.Metric) { b.WriteString(show(m) + "\n") })
	require.Equal(t, 1, parsers.Refused(err))
	b.WriteString("refused: " + err.Error() + "\n")
	testutil.Golden(t, "testdata/input.golden", []byte(b.String()))
}
