package questdb

import (
	"math"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/stretchr/testify/require"
)

// TestSplitUnescaped: a separator that a backslash escapes is not one.
func TestSplitUnescaped(t *testing.T) {
	tests := []struct{ s, before, rest string }{
		{"a,b", "a", ",b"},
		{"abc", "abc", ""},
		{`a\,b,c`, `a\,b`, ",c"},
		{`a\\,b`, `a\\`, ",b"},
		{`a\`, `a\`, ""},
		{`\,\,`, `\,\,`, ""},
		{`x\ y\,z,w`, `x\ y\,z`, ",w"},
		{",", "", ","},
		{"", "", ""},
	}
	for _, tt := range tests {
		before, rest := splitUnescaped(tt.s, ',')
		require.Equal(t, tt.before, before, tt.s)
		require.Equal(t, tt.rest, rest, tt.s)
	}
}

// TestShapeSameVerdicts: a run of metrics checked with the shape shortcut gets exactly the
// verdicts that the full checks give each metric alone, whether or not it has the shape of
// the one before, and for line metrics and structured ones alike.
func TestShapeSameVerdicts(t *testing.T) {
	ts := time.Unix(1, 0)
	line := func(text string, uints bool) morse.Metric {
		return morse.NewLineMetric(morse.LineText{Text: text, Uints: uints}, ts)
	}
	metric := func(name string, tags []morse.Tag, fields ...morse.Field) morse.Metric {
		return morse.NewMetric(name, tags, fields, ts)
	}
	host := []morse.Tag{{Key: "host", Value: "a"}}
	run := []morse.Metric{
		line(`cpu,host=a v=1,n=2i`, false),
		line(`cpu,host=b v=2,n=3i`, false),                    // same shape
		line(`cpu,host=b v=2,n=-9223372036854775808i`, false), // same shape, bad value
		line(`cpu,host=c v=2,n=4i`, false),                    // same shape again
		line(`cpu,host=c v=2,n=4u`, false),                    // n changes type: a new shape
		line(`cpu,host=c v=2,n=9223372036854775808u`, true),   // bad unsigned value
		line(`cpu,host=c v="s",n=4i`, false),                  // v changes type
		line(`cpu,ho-st=c v=2,n=4i`, false),                   // a bad tag key
		line(`cpu,host=c v=2,n-x=4i`, false),                  // a bad field key
		line(`cpu,host=c,v=x v=2`, false),                     // a tag and a field share a name
		line(`cpu\,x,host=c v=2`, false),                      // an escaped table name
		line(`cpu\,x,host=d v=3`, false),
		line(`cpu,host=a v=1,n=2i`, false),
		line(`cpu host=a,v=1,n=2i`, false),      // the tag's key as a field: a new shape
		line(`cpu,host=a,v=1 n=2i`, false),      // a field's key as a tag
		line(`cpu,host=a v=1`, false),           // fewer fields
		line(`cpu,host=a v=1,n=2i,m=3i`, false), // more fields
		line(`cpu,host=a=b v=1,n=2i`, false),    // an equals sign in a tag value
		line(`cpux,host=a v=1,n=2i`, false),     // a longer table name
		line(`cpu,host=a,dc=x v=1,n=2i`, false), // one more tag
		metric("cpu", host, morse.Field{Key: "v", Value: morse.Float(1)}),
		metric("cpu", host, morse.Field{Key: "v", Value: morse.Float(2)}),
		metric("cpu", host, morse.Field{Key: "v", Value: morse.Uint(math.MaxUint64)}),
		metric("cpu", host, morse.Field{Key: "v", Value: morse.Int(math.MinInt64)}),
		metric("cpu", host, morse.Field{Key: "v-x", Value: morse.Int(1)}),
		metric("cpu", []morse.Tag{{Key: "v", Value: "a"}}, morse.Field{Key: "v", Value: morse.Int(1)}),
		metric("cpu", []morse.Tag{{Key: "host", Value: ""}}, morse.Field{Key: "v", Value: morse.Float(1)}),
		metric("cpu", nil, morse.Field{Key: "v", Value: morse.Float(1)}),
		metric("c..pu", nil, morse.Field{Key: "v", Value: morse.Float(1)}),
		morse.NewMetric("cpu", host, []morse.Field{{Key: "v", Value: morse.Float(1)}}, time.Unix(-1, 0)),
	}
	for _, withSchema := range []bool{false, true} {
		var sh shape
		var keys []string
		var sch, alone *schema
		if withSchema {
			// v was made by a FLOAT and n by an INTEGER: a STRING v conflicts.
			sch, alone = &schema{}, &schema{}
			made := []column{{"cpu", "v", "FLOAT"}, {"cpu", "n", "INTEGER"}}
			sch.learn(made)
			alone.learn(made)
		}
		for i, m := range run {
			got := sh.check(m, DefaultMaxNameLen, &keys, sch)
			want := checkMetric(m, DefaultMaxNameLen, &keys)
			if want == nil && alone != nil {
				want = alone.check(m)
			}
			if want == nil {
				require.Nil(t, got, "metric %d", i)
				continue
			}
			require.NotNil(t, got, "metric %d", i)
			require.Equal(t, want.Reason, got.Reason, "metric %d", i)
			require.Equal(t, want.Err.Error(), got.Err.Error(), "metric %d", i)
		}
	}
}
