package filter

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/stretchr/testify/require"
)

func TestFilterGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"cpu", []string{"cpu"}, []string{"cpu0", "cp", ""}},
		{"*", []string{"", "anything.at/all"}, nil},
		{"cpu*", []string{"cpu", "cpu0", "cpu-total"}, []string{"xcpu", "cp"}},
		{"*_bytes", []string{"_bytes", "rx_bytes"}, []string{"rx_bytes_total"}},
		{"*net*", []string{"net", "ethernet0", "nets"}, []string{"ne"}},
		{"cpu?", []string{"cpu0", "cpué"}, []string{"cpu", "cpu10"}},
		{"cpu[0-3]", []string{"cpu0", "cpu3"}, []string{"cpu4", "cpu", "cpu01"}},
		{"cpu[!0-3]", []string{"cpu4", "cpux"}, []string{"cpu0", "cpu"}},
		{"cpu[^0-3]", []string{"cpu4"}, []string{"cpu2"}},
		{"[]a]", []string{"]", "a"}, []string{"b"}},
		{"[a-cx]?z", []string{"b1z", "xyz"}, []string{"d1z", "bz"}},
		{"a*b*c", []string{"abc", "aXbYc", "abbbc", "a-b-b-c"}, []string{"ab", "acb", "abcd"}},
		{"*a*b", []string{"ab", "xaxb", "aab", "abab"}, []string{"aba", "b"}},
		{"a\\*b", []string{"a*b"}, []string{"aXb", "a\\*b"}},
		{"a\\[b", []string{"a[b"}, []string{"ab"}},
		{"[\\]]x", []string{"]x"}, []string{"x"}},
		{"??", []string{"ab", "éü"}, []string{"a", "abc"}},
		{"*.*.*", []string{"a.b.c", "..", "a.b.c.d"}, []string{"a.b"}},
		{"**a", []string{"a", "ba"}, []string{"ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			m, err := compileMatcher([]string{tt.pattern})
			require.NoError(t, err)
			for _, s := range tt.match {
				require.True(t, m.match(s), "%q should match %q", tt.pattern, s)
			}
			for _, s := range tt.noMatch {
				require.False(t, m.match(s), "%q should not match %q", tt.pattern, s)
			}
		})
	}
}

func TestFilterBadPatterns(t *testing.T) {
	tests := []struct {
		pattern string
		want    string
	}{
		{"cpu[", `invalid pattern "cpu[": unterminated [`},
		{"cpu[a-", `invalid pattern "cpu[a-": unterminated [`},
		{"[z-a]", `invalid pattern "[z-a]": bad range z-a`},
		{`x\`, `invalid pattern "x\\": trailing backslash`},
		{`[\`, `invalid pattern "[\\": unterminated [`},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			_, err := New(Config{TagDrop: map[string][]string{"cpu": {"ok", tt.pattern}}})
			var fe *morse.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "tagdrop.cpu", fe.Key)
			require.EqualError(t, fe.Err, tt.want)
		})
	}
}

func TestFilterReportsEveryBadPattern(t *testing.T) {
	_, err := New(Config{NamePass: []string{"a[", "ok"}, FieldExclude: []string{"b["}})
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *morse.FieldError
		require.True(t, errors.As(e, &fe))
		keys = append(keys, fe.Key)
	}
	require.Equal(t, []string{"namepass", "fieldexclude"}, keys)
}

func filterTestMetric() morse.Metric {
	return morse.NewMetric("cpu",
		[]morse.Tag{{Key: "cpu", Value: "cpu0"}, {Key: "host", Value: "h1"}, {Key: "env", Value: "prod"}},
		[]morse.Field{{Key: "usage_user", Value: morse.Float(1)}, {Key: "usage_system", Value: morse.Float(2)}, {Key: "usage_guest", Value: morse.Float(3)}},
		time.Unix(0, 0))
}

// filterApplyTests filter filterTestMetric, cpu,cpu=cpu0,env=prod,host=h1 with the fields
// usage_user, usage_system and usage_guest.
var filterApplyTests = []struct {
	name       string
	cfg        Config
	pass       bool
	wantTags   []string // tag keys left, when the metric passes
	wantFields []string // field keys left, when the metric passes
}{
	{name: "empty", pass: true},
	{name: "namepass hit", cfg: Config{NamePass: []string{"mem", "c*"}}, pass: true},
	{name: "namepass miss", cfg: Config{NamePass: []string{"mem"}}},
	{name: "namedrop hit", cfg: Config{NameDrop: []string{"cpu"}}},
	{name: "namedrop miss", cfg: Config{NameDrop: []string{"disk*"}}, pass: true},
	{name: "tagpass hit", cfg: Config{TagPass: map[string][]string{"cpu": {"cpu[0-3]"}}}, pass: true},
	{name: "tagpass any tag", cfg: Config{TagPass: map[string][]string{"cpu": {"cpu9"}, "env": {"prod"}}}, pass: true},
	{name: "tagpass miss", cfg: Config{TagPass: map[string][]string{"cpu": {"cpu-total"}}}},
	{name: "tagpass missing tag", cfg: Config{TagPass: map[string][]string{"region": {"*"}}}},
	{name: "tagdrop hit", cfg: Config{TagDrop: map[string][]string{"env": {"prod", "dev"}}}},
	{name: "tagdrop missing tag", cfg: Config{TagDrop: map[string][]string{"region": {"*"}}}, pass: true},
	{
		name: "fieldinclude", cfg: Config{FieldInclude: []string{"usage_[us]*"}}, pass: true,
		wantFields: []string{"usage_user", "usage_system"},
	},
	{
		name: "fieldexclude", cfg: Config{FieldExclude: []string{"usage_guest"}}, pass: true,
		wantFields: []string{"usage_user", "usage_system"},
	},
	{
		name: "fieldinclude and fieldexclude", pass: true,
		cfg:        Config{FieldInclude: []string{"usage_*"}, FieldExclude: []string{"*_user"}},
		wantFields: []string{"usage_system", "usage_guest"},
	},
	{name: "no field left", cfg: Config{FieldInclude: []string{"time_*"}}},
	{name: "taginclude", cfg: Config{TagInclude: []string{"cpu", "host"}}, pass: true, wantTags: []string{"cpu", "host"}},
	{name: "tagexclude", cfg: Config{TagExclude: []string{"h*"}}, pass: true, wantTags: []string{"cpu", "env"}},
	{name: "no tag left is fine", cfg: Config{TagExclude: []string{"*"}}, pass: true, wantTags: []string{}},
	{
		name: "tagpass sees tags before taginclude", pass: true,
		cfg:      Config{TagPass: map[string][]string{"env": {"prod"}}, TagInclude: []string{"cpu"}},
		wantTags: []string{"cpu"},
	},
}

func TestFilterApply(t *testing.T) {
	for _, tt := range filterApplyTests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.cfg)
			require.NoError(t, err)
			require.Equal(t, tt.cfg.IsEmpty(), f.Empty())
			in := filterTestMetric()
			before := fmt.Sprint(in.Tags(), in.Fields())
			out, ok := f.Apply(in)
			require.Equal(t, tt.pass, ok)
			require.Equal(t, before, fmt.Sprint(in.Tags(), in.Fields()), "Apply must not modify its input")
			if !ok {
				return
			}
			wantTags, wantFields := tt.wantTags, tt.wantFields
			if wantTags == nil {
				wantTags = []string{"cpu", "env", "host"}
			}
			if wantFields == nil {
				wantFields = []string{"usage_user", "usage_system", "usage_guest"}
			}
			require.Equal(t, wantTags, tagKeys(out))
			require.Equal(t, wantFields, fieldKeys(out))
			require.Equal(t, in.Name(), out.Name())
			require.Equal(t, in.Time(), out.Time())
		})
	}
}

func tagKeys(m morse.Metric) []string {
	keys := []string{}
	for _, t := range m.Tags() {
		keys = append(keys, t.Key)
	}
	return keys
}

func fieldKeys(m morse.Metric) []string {
	keys := []string{}
	for _, f := range m.Fields() {
		keys = append(keys, f.Key)
	}
	return keys
}

// TestFilterPassThroughDoesNotAllocate covers the hot path: most metrics pass most filters
// unchanged, once per output.
func TestFilterPassThroughDoesNotAllocate(t *testing.T) {
	m := filterTestMetric()
	passing, err := New(Config{
		NamePass:     []string{"mem", "cpu*"},
		TagPass:      map[string][]string{"cpu": {"cpu[0-9]"}},
		FieldInclude: []string{"usage_*"},
		TagExclude:   []string{"internal_*"},
	})
	require.NoError(t, err)
	empty, err := New(Config{})
	require.NoError(t, err)
	for name, f := range map[string]*Filter{"nil": nil, "empty": empty, "passing": passing} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, ok := f.Apply(m); !ok {
				panic("rejected")
			}
		})
		require.Zero(t, allocs, name)
	}
}

func TestFilterNilIsEmpty(t *testing.T) {
	var f *Filter
	require.True(t, f.Empty())
	m := filterTestMetric()
	out, ok := f.Apply(m)
	require.True(t, ok)
	require.Equal(t, m, out)
}

func TestFilterManyExactNames(t *testing.T) {
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("m%d", i)
	}
	f, err := New(Config{NamePass: append(names, "x*")})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		pass bool
	}{{"m0", true}, {"m19", true}, {"m20", false}, {"xyz", true}, {"y", false}} {
		_, ok := f.Apply(morse.NewMetric(tt.name, nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Time{}))
		require.Equal(t, tt.pass, ok, tt.name)
	}
}

func BenchmarkFilterApply(b *testing.B) {
	m := filterTestMetric()
	cases := []struct {
		name string
		cfg  Config
	}{
		{"empty", Config{}},
		{"pass-through", Config{
			NamePass: []string{"mem", "cpu*"}, TagPass: map[string][]string{"cpu": {"cpu[0-9]"}},
			FieldInclude: []string{"usage_*"},
		}},
		{"trim-fields", Config{FieldExclude: []string{"usage_guest"}}},
		{"reject", Config{NameDrop: []string{"c?u"}}},
	}
	for _, c := range cases {
		f, err := New(c.cfg)
		require.NoError(b, err)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Apply(m)
			}
		})
	}
}
