package influx_test

import (
	"math"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// FuzzRoundTrip builds a metric from the fuzzer's arguments, serializes it and parses it
// back. The result must be the metric that expect predicts, or the serializer must refuse
// the metric cleanly. The seed corpus is in testdata/fuzz/FuzzRoundTrip.
//
// kind picks the first field's type (float from bits, int, uint, string, bool, none); opts
// holds the options: bit 0 adds a second string field, bits 1-2 the precision, bit 3 uint
// support, bit 4 a zero time.
func FuzzRoundTrip(f *testing.F) {
	f.Add("cpu", "host", "a", "region", "eu", "usage", uint8(0), math.Float64bits(1.5), "s", int64(1700000000123456789), uint8(0))
	f.Fuzz(func(t *testing.T, name, k1, v1, k2, v2, fk string, kind uint8, bits uint64, sv string, ns int64, opts uint8) {
		var v morse.Value
		switch kind % 6 {
		case 0:
			v = morse.Float(math.Float64frombits(bits))
		case 1:
			v = morse.Int(int64(bits))
		case 2:
			v = morse.Uint(bits)
		case 3:
			v = morse.String(sv)
		case 4:
			v = morse.Bool(bits&1 == 1)
		}
		fieldList := []morse.Field{{Key: fk, Value: v}}
		if opts&1 != 0 {
			fieldList = append(fieldList, morse.Field{Key: sv, Value: morse.String(sv)})
		}
		tm := time.Unix(0, ns)
		if opts&16 != 0 {
			tm = time.Time{}
		}
		precisions := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second}
		o := influx.Options{Precision: precisions[opts>>1&3], UintSupport: opts&8 != 0}
		m := morse.NewMetric(name, []morse.Tag{{Key: k1, Value: v1}, {Key: k2, Value: v2}}, fieldList, tm)
		roundTrip(t, m, o)
	})
}
