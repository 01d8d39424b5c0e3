package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func writeList(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.golden")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

const list = `telegraf v1.39.3
config extra = true
measurement m from=plugins/inputs/m/m.go:10
tag host from=plugins/inputs/m/m.go:11
tag label from=plugins/inputs/m/m.go:12       # machine-dependent: only some devices have one
field a unsigned from=plugins/inputs/m/m.go:20
field b float from=plugins/inputs/m/m.go:21 needs=extra
field c integer from=plugins/inputs/m/m.go:22  # absent-here: FreeBSD only
field d string from=plugins/inputs/m/m.go      # optional: only sometimes
`

func TestLoadShapesAttributes(t *testing.T) {
	s, err := LoadShapes(writeList(t, list))
	require.NoError(t, err)
	require.Equal(t, "v1.39.3", s.Upstream)
	require.Equal(t, "extra = true\n", s.Config)
	require.Len(t, s.List, 1)
	m := s.List[0]
	require.Equal(t, "plugins/inputs/m/m.go:10", m.From)
	require.Equal(t, []ShapeItem{
		{Key: "host", From: "plugins/inputs/m/m.go:11"},
		{Key: "label", Marker: MachineDependent, From: "plugins/inputs/m/m.go:12"},
	}, m.Tags)
	require.Equal(t, []ShapeItem{
		{Key: "a", Type: "unsigned", From: "plugins/inputs/m/m.go:20"},
		{Key: "b", Type: "float", From: "plugins/inputs/m/m.go:21", Needs: "extra"},
		{Key: "c", Type: "integer", Marker: AbsentHere, From: "plugins/inputs/m/m.go:22"},
		{Key: "d", Type: "string", Marker: Optional, From: "plugins/inputs/m/m.go"},
	}, m.Fields)
}

func TestLoadShapesRefusesBadLists(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"a release list needs sources", "telegraf v1\nmeasurement m from=a.go\nfield x float\n", "measurement m: x: no from="},
		{"unknown attribute", "measurement m\nfield x float size=3\n", `bad attribute "size=3"`},
		{"unknown type", "measurement m\nfield x int64\n", `unknown type "int64"`},
		{"field before measurement", "field x float\n", "comes before any measurement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadShapes(writeList(t, tt.body))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestCheckAndDefaults(t *testing.T) {
	s, err := LoadShapes(writeList(t, list))
	require.NoError(t, err)
	at := time.Unix(1, 0)
	full := morse.NewMetric("m", []morse.Tag{{Key: "host", Value: "h"}},
		[]morse.Field{{Key: "a", Value: morse.Uint(1)}, {Key: "b", Value: morse.Float(1)}}, at)
	require.Empty(t, s.Check([]morse.Metric{full}), "machine-dependent and optional items may be absent")
	require.Equal(t, []string{"m: field a: type integer, golden says unsigned"},
		s.Check([]morse.Metric{full.WithField("a", morse.Int(1))}))
	require.Equal(t, []string{"m: field c: emitted but marked absent-here"},
		s.Check([]morse.Metric{full.WithField("c", morse.Int(1))}))

	def := s.Defaults()
	require.Equal(t, []string{"m: field b: emitted but marked absent-here"}, def.Check([]morse.Metric{full}),
		"an item that needs an option is absent with the defaults")
	plain := morse.NewMetric("m", []morse.Tag{{Key: "host", Value: "h"}, {Key: "label", Value: "l"}},
		[]morse.Field{{Key: "a", Value: morse.Uint(1)}}, at)
	require.Empty(t, def.Check([]morse.Metric{plain}))
}
