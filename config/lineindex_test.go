package config

import (
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
)

// lineIndexText holds every construct that could mislead the index.
const lineIndexText = `# comment with [brackets] and key = "value"
top = 1
[agent]
  interval = "10s" # trailing comment
  "quoted.key" = 2
  dotted.inner = 3

[[inputs.cpu]]
  servers = [
    "a", # ] inside a comment
    "b",
  ]
  text = """
[[inputs.fake]]
not = "a key"
"""
  lit = '''
x = 1'''
  after = true
  inline = { a = 1, b = [1, 2] }
  [inputs.cpu.tags]
    role = "db"

[[inputs.cpu]]
  percpu = false
  [inputs.cpu.tagpass]
    cpu = ["cpu0"]
  [[inputs.cpu.sub]]
    k = 1
  [[inputs.cpu.sub]]
    k = 2

[[inputs.mem]]
  escaped = "a \" = b"
  arr_of_tables = [{ x = 1 }, { x = 2 }]
`

// lineIndexTests are the lines of paths in lineIndexText.
var lineIndexTests = []struct {
	path string
	line int
}{
	{"top", 2},
	{"agent", 3},
	{"agent.interval", 4},
	{"agent.quoted.key", 5},
	{"agent.dotted", 6},
	{"agent.dotted.inner", 6},
	{"inputs.cpu[0]", 8},
	{"inputs.cpu[0].servers", 9},
	{"inputs.cpu[0].servers[0]", 10},
	{"inputs.cpu[0].servers[1]", 11},
	{"inputs.cpu[0].text", 13},
	{"inputs.cpu[0].lit", 17},
	{"inputs.cpu[0].after", 19},
	{"inputs.cpu[0].inline.a", 20},
	{"inputs.cpu[0].inline.b[1]", 20},
	{"inputs.cpu[0].tags", 21},
	{"inputs.cpu[0].tags.role", 22},
	{"inputs.cpu[1]", 24},
	{"inputs.cpu[1].percpu", 25},
	{"inputs.cpu[1].tagpass.cpu", 27},
	{"inputs.cpu[1].sub[0].k", 29},
	{"inputs.cpu[1].sub[1].k", 31},
	{"inputs.mem[0].escaped", 34},
	{"inputs.mem[0].arr_of_tables[1].x", 35},
	// Paths that are not written fall back to their closest written parent.
	{"inputs.cpu[0].nothere", 8},
	{"inputs.cpu[1].tagpass.cpu[0]", 27},
	{"inputs.fake", 8}, // the implicit [inputs] table starts at the first [[inputs.cpu]]
	{"nothing", 0},
}

func TestLineIndex(t *testing.T) {
	// The index runs only on text that the parser accepted.
	var doc map[string]any
	_, err := toml.Decode(lineIndexText, &doc)
	require.NoError(t, err)

	idx := buildIndex(lineIndexText)
	for _, tt := range lineIndexTests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.line, idx.line(tt.path))
		})
	}
}

func TestParentPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a.b[1].c", "a.b[1]"},
		{"a.b[1]", "a.b"},
		{"a.b", "a"},
		{"a", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, parentPath(tt.in), tt.in)
	}
}
