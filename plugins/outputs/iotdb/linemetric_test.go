package iotdb

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// lineCorpus are entries the influx parser keeps as line metrics, with every escape and
// value spelling line protocol has.
const lineCorpus = `cpu,cpu=cpu-total,host=server01,region=us-west usage_idle=98.5,usage_user=1.2,usage_system=0.3 1700000000000000000
mem,host=server01 total=17179869184i,used=8589934592i,used_percent=50,available=8589934592u 1700000000000000000
system,host=server01 load1=0.42,uptime=864000i,uptime_format="10 days,  0:00",n_cpus=8i 1700000000000000000
weather,location=us\ midwest,season=summer temperature=82,raining=false 1465839830100400200
escapes,k\ 2=v\ 2,k\,1=v\=1 f\=1="a \"quote\" and a \\ backslash" 1
app\ events,z=last,a=first,m=mid\,dle msg="x=1, y=2",n=-3i 2
a\,b,t=x s="trailing \\",empty="" 3
unicode,città=Zürich température=21.5,note="☀ 東京" 1700000000000000000
bools,host=a t1=t,t2=T,t3=true,t4=True,t5=TRUE,f1=f,f2=F,f3=false,f4=False,f5=FALSE 1
numbers a=1e+06,b=-0.0015,c=0.5,d=-0,e=9223372036854775807i,f=-9223372036854775808i,g=18446744073709551615u,h=1.5E-7 1
`

// TestLineDecoder: a line metric decodes to what expanding it gives, name, tags (sorted),
// fields and their types and values, without allocating for tokens without escapes.
func TestLineDecoder(t *testing.T) {
	p := influx.Parser{LineMetrics: func() bool { return true }}
	var lines []morse.Metric
	p.Parse([]byte(lineCorpus), func(m morse.Metric) { lines = append(lines, m) })
	require.Len(t, lines, strings.Count(lineCorpus, "\n"))
	var d lineDecoder
	for _, m := range lines {
		lt, ok := m.Line()
		require.True(t, ok, "%v is a line metric", m)
		got, ok := d.decode(lt.Text, m.Time())
		require.True(t, ok, lt.Text)
		want := m.Expanded()
		require.Equal(t, want.Name(), got.Name(), lt.Text)
		require.Equal(t, append([]morse.Tag{}, want.Tags()...), append([]morse.Tag{}, got.Tags()...), lt.Text)
		require.Equal(t, want.Fields(), got.Fields(), lt.Text)
		require.Equal(t, want.Time(), got.Time(), lt.Text)
	}
	lt, _ := lines[0].Line()
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = d.decode(lt.Text, u0) }))
	for _, bad := range []string{"m", "m v", "m,t v=1", "m v=1,", `m v="open`, "m v=1x", "m  v=1"} {
		_, ok := d.decode(bad, u0)
		require.False(t, ok, bad)
	}
}
