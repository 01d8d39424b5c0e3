package morse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMergeMissingTags(t *testing.T) {
	tests := []struct {
		name              string
		have, extra, want []Tag
	}{
		{"nothing to add", []Tag{{Key: "a", Value: "1"}}, nil, []Tag{{Key: "a", Value: "1"}}},
		{"all present keep own values", []Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}, []Tag{{Key: "a", Value: "x"}}, []Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}},
		{"interleaved", []Tag{{Key: "b", Value: "2"}, {Key: "d", Value: "4"}}, []Tag{{Key: "a", Value: "x"}, {Key: "c", Value: "y"}, {Key: "e", Value: "z"}},
			[]Tag{{Key: "a", Value: "x"}, {Key: "b", Value: "2"}, {Key: "c", Value: "y"}, {Key: "d", Value: "4"}, {Key: "e", Value: "z"}}},
		{"empty have", nil, []Tag{{Key: "host", Value: "h"}}, []Tag{{Key: "host", Value: "h"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have := append([]Tag(nil), tc.have...)
			require.Equal(t, tc.want, mergeMissingTags(have, tc.extra))
			require.Equal(t, tc.have, have, "the input slice is never written")
			m := NewMetric("m", have, []Field{{Key: "v", Value: Int(1)}}, time.Time{})
			require.Equal(t, tc.want, m.WithMissingTags(tc.extra).Tags(), "WithMissingTags")
			line := NewLineMetric(LineText{Text: lineOf(have) + " v=1i"}, time.Time{})
			require.Equal(t, tc.want, line.WithMissingTags(tc.extra).Tags(), "WithMissingTags on a line metric")
		})
	}
}

// lineOf writes the measurement "m" and tags as the head of a line-protocol entry.
func lineOf(tags []Tag) string {
	s := "m"
	for _, t := range tags {
		s += "," + t.Key + "=" + t.Value
	}
	return s
}
