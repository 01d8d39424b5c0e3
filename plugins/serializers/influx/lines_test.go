package influx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// TestLineMetricUintsWithoutUintSupport: an output without uint support gets a line
// metric's unsigned integers as signed ones, clamped to math.MaxInt64, and everything else as
// it was: keys and strings that look like unsigned integers too. The text is what the
// expanded metric serializes to.
func TestLineMetricUintsWithoutUintSupport(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`m a=1u`, `m a=1i`},
		{`m a=1u,b=2i,c=3u`, `m a=1i,b=2i,c=3i`},
		{`cpu,host=u1 cpu=5u,u=6u,5u=7u,x=true`, `cpu,host=u1 cpu=5i,u=6i,5u=7i,x=true`},
		{`m k\=1u=2u,k\,3u=4u`, `m k\=1u=2i,k\,3u=4i`},
		{`m a=007u,b=0u`, `m a=7i,b=0i`},
		{`m a=9223372036854775807u,b=9223372036854775808u,c=18446744073709551615u`,
			`m a=9223372036854775807i,b=9223372036854775807i,c=9223372036854775807i`},
		{`m s="x=5u,y",a=5u`, `m s="x=5u,y",a=5i`},
		{`m s="q\"=5u,",a=5u,t="\\"`, `m s="q\"=5u,",a=5i,t="\\"`},
		{`app\ x,t=a\ b f=1.5,n=2u`, `app\ x,t=a\ b f=1.5,n=2i`},
	} {
		m := morse.NewLineMetric(morse.LineText{Text: tc.text, Uints: true}, time.Unix(0, 17))
		s := influx.New(influx.Options{})
		got, err := s.AppendMetric(nil, m)
		require.NoError(t, err)
		require.Equal(t, tc.want+" 17\n", string(got), tc.text)
		expanded, err := s.AppendMetric(nil, m.Expanded())
		require.NoError(t, err)
		require.Equal(t, string(expanded), string(got), tc.text)
	}
}
