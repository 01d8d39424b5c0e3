package prometheusremotewrite_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	prw "github.com/morse-agent/morse/plugins/serializers/prometheusremotewrite"
)

// TestLabelOrder holds the labels of each series sorted by name, one per name, wherever
// __name__, le and quantile fall among the tags (upper case and "_" sort before
// "__name__"), with the series' name winning over a tag named __name__, a tag over le from
// a bucket, and series of one tag set found again when other sets come in between.
func TestLabelOrder(t *testing.T) {
	batch := []morse.Metric{
		metric("m", tags{"Z": "1", "host": "h", "__name__": "tag"}, fields{"a": 1.0, "b": 2.0}, t0),
		metric("m", tags{"host": "other"}, fields{"a": 3.0}, t0),
		metric("h", tags{"A": "x", "_x": "y", "le": "0.5"}, fields{"t_bucket": 4.0}, t0),
		metric("h", tags{"A": "x", "_x": "y"}, fields{"t_count": 5.0, "t_sum": 6.0}, t0),
		metric("s", tags{"quantile": "0.9", "r": "1", "a": "2"}, fields{"q": 7.0}, t0),
		metric("h", tags{"le": "1"}, fields{"u_bucket": 8.0, "lbl": "kept"}, t0),
		metric("h", tags{"le": "1"}, fields{"u_bucket": 8.0, "le": "string"}, t0),
		metric("m", tags{"Z": "1", "host": "h", "__name__": "tag"}, fields{"a": 9.0}, t0.Add(1e9)),
	}
	data, err := prw.New(prw.Options{StringAsLabel: true}).AppendBatch(nil, batch)
	require.NoError(t, err)
	require.Equal(t, `Z="1" __name__="m_a" host="h" 1 9
Z="1" __name__="m_b" host="h" 2
__name__="m_a" host="other" 3
A="x" __name__="h_t_sum" _x="y" 6
A="x" __name__="h_t_count" _x="y" 5
A="x" __name__="h_t_bucket" _x="y" le="+Inf" 5
A="x" __name__="h_t_bucket" _x="y" le="0.5" 4
__name__="s_q" a="2" quantile="0.9" r="1" 7
__name__="h_u_sum" lbl="kept" 0
__name__="h_u_count" lbl="kept" 0
__name__="h_u_bucket" lbl="kept" le="+Inf" 0
__name__="h_u_bucket" lbl="kept" le="1" 8
__name__="h_u_sum" le="string" 0
__name__="h_u_count" le="string" 0
__name__="h_u_bucket" le="string" 8
`, flat(decode(t, data)))
}

// flat renders series in the order written, labels in the order written, then values.
func flat(series []wseries) string {
	out := ""
	for _, s := range series {
		for i, l := range s.labels {
			if i > 0 {
				out += " "
			}
			out += l.name + "=" + `"` + l.value + `"`
		}
		for _, smp := range s.samples {
			out += " " + strconv.FormatFloat(smp.value, 'f', -1, 64)
		}
		out += "\n"
	}
	return out
}
