package prometheusremotewrite_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// The tests read what the serializer wrote with a decoder of their own, written from
// prompb's message definitions (remote write 1.0), and render it as Telegraf's tests do
// (prompbToText): one line per sample, `name{label="value", ...} value`, labels sorted.

type wlabel struct{ name, value string }

type wsample struct {
	value float64
	ts    int64
}

type wseries struct {
	labels  []wlabel
	samples []wsample
}

// decode reads a snappy-compressed WriteRequest.
func decode(t testing.TB, data []byte) []wseries {
	t.Helper()
	pb, err := snappy.Decode(nil, data)
	require.NoError(t, err)
	var out []wseries
	eachField(t, pb, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) {
		require.Equal(t, protowire.Number(1), num, "WriteRequest has only timeseries")
		var s wseries
		eachField(t, v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
			switch num {
			case 1:
				var l wlabel
				eachField(t, v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
					if num == 1 {
						l.name = string(v)
					} else {
						l.value = string(v)
					}
				})
				s.labels = append(s.labels, l)
			case 2:
				var smp wsample
				eachField(t, v, func(num protowire.Number, _ protowire.Type, _ []byte, n uint64) {
					if num == 1 {
						smp.value = math.Float64frombits(n)
					} else {
						smp.ts = int64(n)
					}
				})
				s.samples = append(s.samples, smp)
			default:
				t.Fatalf("unexpected TimeSeries field %d", num)
			}
		})
		out = append(out, s)
	})
	return out
}

// eachField calls f with each field of message b: the bytes of a length-delimited one, the
// number of a varint or fixed64 one. Fields must come in ascending order, as gogo writes them.
func eachField(t testing.TB, b []byte, f func(protowire.Number, protowire.Type, []byte, uint64)) {
	t.Helper()
	last := protowire.Number(0)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.GreaterOrEqual(t, n, 0, "bad tag")
		require.GreaterOrEqual(t, num, last, "fields out of order")
		last = num
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			require.GreaterOrEqual(t, n, 0)
			f(num, typ, v, 0)
			b = b[n:]
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			require.GreaterOrEqual(t, n, 0)
			f(num, typ, nil, v)
			b = b[n:]
		case protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			require.GreaterOrEqual(t, n, 0)
			f(num, typ, nil, v)
			b = b[n:]
		default:
			t.Fatalf("unexpected wire type %d", typ)
		}
	}
}

// text renders series as Telegraf's prompbToText does.
func text(series []wseries) string {
	var b strings.Builder
	for _, s := range series {
		name := ""
		var ls []string
		for _, l := range s.labels {
			if l.name == "__name__" {
				name = l.value
				continue
			}
			ls = append(ls, fmt.Sprintf("%s=%q", l.name, l.value))
		}
		slices.Sort(ls)
		head := name
		if len(ls) > 0 {
			head += "{" + strings.Join(ls, ", ") + "}"
		}
		for _, smp := range s.samples {
			b.WriteString(head + " " + strconv.FormatFloat(smp.value, 'f', -1, 64) + "\n")
		}
	}
	return strings.TrimSpace(b.String())
}
