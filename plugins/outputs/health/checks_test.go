package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func bound(v float64) *float64 { return &v }

func cpu(fields ...morse.Field) morse.Metric {
	return morse.NewMetric("cpu", nil, fields, time.Unix(1700000000, 0))
}

func idle(v morse.Value) morse.Metric { return cpu(morse.Field{Key: "time_idle", Value: v}) }

// TestComparesAsTelegraf: Telegraf 1.39.3's compares_test cases. A metric without the field
// passes; a string fails; integers, unsigned integers and floats are numbers; a boolean is 1
// or 0; each operator holds or not.
func TestComparesAsTelegraf(t *testing.T) {
	gt0 := &Compares{Field: "time_idle", GT: bound(0)}
	for _, tc := range []struct {
		name  string
		c     *Compares
		batch []morse.Metric
		pass  bool
	}{
		{"field not found", &Compares{Field: "time_idle", GT: bound(42)}, []morse.Metric{cpu()}, true},
		{"string field", &Compares{Field: "time_idle", GT: bound(42)}, []morse.Metric{idle(morse.String("foo"))}, false},
		{"int64", gt0, []morse.Metric{idle(morse.Int(42))}, true},
		{"uint64", gt0, []morse.Metric{idle(morse.Uint(42))}, true},
		{"float64", gt0, []morse.Metric{idle(morse.Float(42))}, true},
		{"bool true", gt0, []morse.Metric{idle(morse.Bool(true))}, true},
		{"bool false", gt0, []morse.Metric{idle(morse.Bool(false))}, false},
		{"string number", gt0, []morse.Metric{idle(morse.String("42.0"))}, false},
		{"gt", &Compares{Field: "time_idle", GT: bound(41)}, []morse.Metric{idle(morse.Float(42))}, true},
		{"not gt", &Compares{Field: "time_idle", GT: bound(42)}, []morse.Metric{idle(morse.Float(42))}, false},
		{"ge", &Compares{Field: "time_idle", GE: bound(42)}, []morse.Metric{idle(morse.Float(42))}, true},
		{"not ge", &Compares{Field: "time_idle", GE: bound(43)}, []morse.Metric{idle(morse.Float(42))}, false},
		{"lt", &Compares{Field: "time_idle", LT: bound(43)}, []morse.Metric{idle(morse.Float(42))}, true},
		{"not lt", &Compares{Field: "time_idle", LT: bound(42)}, []morse.Metric{idle(morse.Float(42))}, false},
		{"le", &Compares{Field: "time_idle", LE: bound(42)}, []morse.Metric{idle(morse.Float(42))}, true},
		{"not le", &Compares{Field: "time_idle", LE: bound(41)}, []morse.Metric{idle(morse.Float(42))}, false},
		{"eq", &Compares{Field: "time_idle", EQ: bound(42)}, []morse.Metric{idle(morse.Float(42))}, true},
		{"not eq", &Compares{Field: "time_idle", EQ: bound(41)}, []morse.Metric{idle(morse.Float(42))}, false},
		{"ne", &Compares{Field: "time_idle", NE: bound(41)}, []morse.Metric{idle(morse.Float(42))}, true},
		{"not ne", &Compares{Field: "time_idle", NE: bound(42)}, []morse.Metric{idle(morse.Float(42))}, false},
		{"every metric must pass", &Compares{Field: "time_idle", LT: bound(50)},
			[]morse.Metric{idle(morse.Float(42)), cpu(), idle(morse.Float(50)), idle(morse.Float(1))}, false},
		{"several bounds", &Compares{Field: "time_idle", GT: bound(0), LT: bound(100), NE: bound(50)},
			[]morse.Metric{idle(morse.Float(42)), idle(morse.Int(99))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.check(tc.batch)
			if tc.pass {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
	require.EqualError(t, (&Compares{Field: "time_idle", GE: bound(0), LT: bound(50)}).check(
		[]morse.Metric{idle(morse.Float(42)), idle(morse.Float(50))}), "cpu: field time_idle = 50 is not < 50")
	require.EqualError(t, gt0.check([]morse.Metric{idle(morse.String("x"))}), "cpu: field time_idle is a string, not a number")
}

// TestContainsAsTelegraf: some metric of the batch must hold the field; an empty batch
// holds none.
func TestContainsAsTelegraf(t *testing.T) {
	c := &Contains{Field: "time_idle"}
	require.NoError(t, c.check([]morse.Metric{cpu(), idle(morse.Int(1))}))
	require.EqualError(t, c.check([]morse.Metric{cpu(morse.Field{Key: "usage", Value: morse.Int(1)})}), "no metric holds field time_idle")
	require.Error(t, c.check(nil))
}
