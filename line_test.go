package morse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var lineTime = time.Unix(1700000000, 5).UTC()

// TestLineMetricExpands: a line metric reads like the metric its text stands for, and any
// change gives a plain metric.
func TestLineMetricExpands(t *testing.T) {
	m := NewLineMetric(LineText{Text: `app\ events,z=1,a=x\,y s="q\"\\",i=-3i,u=4u,f=1.5e3,b=T`, Uints: true}, lineTime)
	want := NewMetric("app events", []Tag{{"a", "x,y"}, {"z", "1"}}, []Field{
		{"s", String(`q"\`)}, {"i", Int(-3)}, {"u", Uint(4)}, {"f", Float(1500)}, {"b", Bool(true)},
	}, lineTime)

	lt, ok := m.Line()
	require.True(t, ok)
	require.Equal(t, `app\ events,z=1,a=x\,y s="q\"\\",i=-3i,u=4u,f=1.5e3,b=T`, lt.Text)
	require.True(t, lt.Uints)
	head, fields := lt.Split()
	require.Equal(t, `app\ events,z=1,a=x\,y`, head)
	require.Equal(t, `s="q\"\\",i=-3i,u=4u,f=1.5e3,b=T`, fields)
	require.Equal(t, "app events", lt.Name())
	require.Equal(t, want, m.Expanded())
	require.Equal(t, want.Name(), m.Name())
	require.Equal(t, want.Tags(), m.Tags())
	require.Equal(t, want.Fields(), m.Fields())
	require.Equal(t, want.HashID(), m.HashID())
	v, ok := m.Tag("a")
	require.True(t, ok)
	require.Equal(t, "x,y", v)
	f, ok := m.Field("u")
	require.True(t, ok)
	require.Equal(t, Uint(4), f)

	moved := m.WithTime(lineTime.Add(time.Second))
	_, ok = moved.Line()
	require.True(t, ok, "a new time keeps the text: the time is not part of it")

	for _, changed := range []Metric{
		m.WithName("n"), m.WithTag("k", "v"), m.WithoutTag("z"), m.WithTags(nil),
		m.WithField("g", Int(1)), m.WithFields(nil),
	} {
		_, ok := changed.Line()
		require.False(t, ok, "a changed metric is held as name, tags and fields")
	}
	require.Equal(t, want.WithTag("k", "v"), m.WithTag("k", "v"))

	plain := NewMetric("m", nil, []Field{{"v", Int(1)}}, lineTime)
	_, ok = plain.Line()
	require.False(t, ok)
	require.Equal(t, plain, plain.Expanded())

	broken := NewLineMetric(LineText{Text: "m v="}, lineTime).Expanded()
	require.Equal(t, "m", broken.Name())
	require.Empty(t, broken.Fields(), "text that does not decode has no fields, which outputs refuse")
}

// TestMergeMissingLineTags: tags a line lacks are added after the measurement, escaped; keys
// it has, escaped or not, are left alone.
func TestMergeMissingLineTags(t *testing.T) {
	for _, tc := range []struct {
		text  string
		extra []Tag
		want  string
	}{
		{"m v=1", []Tag{{"host", "h"}}, "m,host=h v=1"},
		{"m,host=x v=1", []Tag{{"host", "h"}}, "m,host=x v=1"},
		{`m\,n,a\ b=1 v=1`, []Tag{{"a b", "2"}, {"c=d", "é"}}, `m\,n,c\=d=é,a\ b=1 v=1`},
		{`m,k=a\ host=b v=1`, []Tag{{"host", "h"}}, `m,host=h,k=a\ host=b v=1`},
		{`m,k=v s="host=x"`, []Tag{{"host", "h"}}, `m,host=h,k=v s="host=x"`},
	} {
		m, ok := mergeMissingLineTags(NewLineMetric(LineText{Text: tc.text}, lineTime), tc.extra)
		require.True(t, ok)
		lt, _ := m.Line()
		require.Equal(t, tc.want, lt.Text, "text %q", tc.text)
	}
	for _, bad := range []Tag{{"", "v"}, {"k", ""}, {"k", "a\\"}, {"k", "\xff"}, {"k\n", "v"}} {
		_, ok := mergeMissingLineTags(NewLineMetric(LineText{Text: "m v=1"}, lineTime), []Tag{bad})
		require.False(t, ok, "%q", bad)
	}
}

// TestLineTagAsExpanded: a line metric's Tag reads the text and answers what the expanded
// metric answers, escapes and absent keys included.
func TestLineTagAsExpanded(t *testing.T) {
	lines := []string{
		`cpu,host=a,region=eu usage=1`,
		`cpu usage=1`,
		`cpu,host=a usage=1,host="field, not tag"`,
		`weird\ name,tag\,key=v\=1,a\ b=c\ d,e\=f=g\,h x=1i`,
		`m,empty\=key=1,host=h\ 1 x="a b,c=d"`,
	}
	for _, text := range lines {
		m := NewLineMetric(LineText{Text: text}, time.Unix(1, 0))
		e := m.Expanded()
		require.NotEmpty(t, e.Fields(), "%s decodes", text)
		keys := []string{"host", "region", "absent", "x", "usage", "tag,key", "a b", "e=f", "k", "empty=key", ""}
		for _, tag := range e.Tags() {
			keys = append(keys, tag.Key)
		}
		for _, k := range keys {
			wv, wok := e.Tag(k)
			gv, gok := m.Tag(k)
			require.Equal(t, wok, gok, "%s: has %q", text, k)
			require.Equal(t, wv, gv, "%s: value of %q", text, k)
		}
	}
}
