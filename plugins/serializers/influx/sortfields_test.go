package influx

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestSortFields: fields come out in key order, the metric's own slice is left as it was,
// and a scratch slice is reused rather than allocated again.
func TestSortFields(t *testing.T) {
	f := func(keys ...string) []morse.Field {
		out := make([]morse.Field, len(keys))
		for i, k := range keys {
			out[i] = morse.Field{Key: k, Value: morse.Int(int64(i))}
		}
		return out
	}
	m := morse.NewMetric("m", nil, f("c", "a", "b"), time.Unix(1, 0))
	for _, tc := range []struct {
		name    string
		scratch *[]morse.Field
	}{{"no scratch", nil}, {"scratch", new([]morse.Field)}} {
		t.Run(tc.name, func(t *testing.T) {
			got := SortFields(m, tc.scratch)
			require.Equal(t, []string{"a", "b", "c"}, keys(got.Fields()))
			require.Equal(t, []string{"c", "a", "b"}, keys(m.Fields()), "the metric itself is unchanged")
			if tc.scratch != nil {
				require.Equal(t, got.Fields(), *tc.scratch)
				again := SortFields(m, tc.scratch)
				require.Same(t, &got.Fields()[0], &again.Fields()[0], "the scratch slice is reused")
			}
		})
	}
	sorted := morse.NewMetric("m", nil, f("a", "b"), time.Unix(1, 0))
	require.Same(t, &sorted.Fields()[0], &SortFields(sorted, nil).Fields()[0], "sorted fields are kept as they are")
}

func keys(fs []morse.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Key
	}
	return out
}
