package config

import (
	"strings"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/stretchr/testify/require"
)

type decodeEmbedded struct {
	Shared string `toml:"shared"`
}

type decodeTarget struct {
	decodeEmbedded
	*DecodePtrEmbedded
	Name     string                `toml:"name"`
	Untagged int                   // matched by name, ignoring case
	Skipped  string                `toml:"-"`
	Small    int8                  `toml:"small"`
	Unsigned uint8                 `toml:"unsigned"`
	Float    float32               `toml:"float"`
	Wait     morse.Duration        `toml:"wait"`
	Std      time.Duration         `toml:"std"`
	Size     morse.Size            `toml:"size"`
	Prec     Precision             `toml:"prec"`
	When     time.Time             `toml:"when"`
	List     []int                 `toml:"list"`
	Pair     [2]string             `toml:"pair"`
	Map      map[string]int        `toml:"map"`
	Ptr      *int                  `toml:"ptr"`
	Any      any                   `toml:"any"`
	Sub      decodeSub             `toml:"sub"`
	Subs     []decodeSub           `toml:"subs"`
	Nested   map[string]morse.Size `toml:"nested"`
	Strs     map[string]string     `toml:"strs"`
}

// DecodePtrEmbedded is exported so that its nil pointer can be allocated when a key needs it.
type DecodePtrEmbedded struct {
	Deep bool `toml:"deep"`
}

type decodeSub struct {
	A int    `toml:"a"`
	B string `toml:"b"`
}

func decodeText(t *testing.T, text string, v any) Errors {
	t.Helper()
	f, err := Read(Options{Sources: []Source{{Name: "d.conf", Data: []byte("[[inputs.x]]\n" + text)}}})
	require.NoError(t, err)
	require.Len(t, f.Inputs, 1)
	return f.Inputs[0].Decode(v)
}

func TestPluginDecodeValues(t *testing.T) {
	var got decodeTarget
	errs := decodeText(t, `
shared = "s"
deep = true
name = "n"
UNTAGGED = 7
small = -128
unsigned = 255
float = 1
wait = "1m"
std = "2ms"
size = "1KiB"
prec = "us"
when = 2024-01-02T03:04:05Z
list = [1, 2, 3]
pair = ["a", "b"]
map = { x = 1 }
ptr = 5
any = [1, "two"]
sub = { a = 1, b = "x" }
subs = [{ a = 1 }, { a = 2 }]
strs = {}
[inputs.x.nested]
  disk = "2MB"
`, &got)
	require.Empty(t, errs)
	five := 5
	want := decodeTarget{
		decodeEmbedded:    decodeEmbedded{Shared: "s"},
		DecodePtrEmbedded: &DecodePtrEmbedded{Deep: true},
		Name:              "n", Untagged: 7, Small: -128, Unsigned: 255, Float: 1,
		Wait: morse.Duration(time.Minute), Std: 2 * time.Millisecond, Size: 1024, Prec: Precision(time.Microsecond),
		When: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		List: []int{1, 2, 3}, Pair: [2]string{"a", "b"}, Map: map[string]int{"x": 1}, Ptr: &five,
		Any: []any{int64(1), "two"}, Sub: decodeSub{A: 1, B: "x"}, Subs: []decodeSub{{A: 1}, {A: 2}},
		Nested: map[string]morse.Size{"disk": 2000000}, Strs: map[string]string{},
	}
	require.Equal(t, want, got)
}

func TestPluginDecodeKeepsDefaults(t *testing.T) {
	got := decodeTarget{Name: "default", List: []int{9}}
	require.Empty(t, decodeText(t, `small = 1`, &got))
	require.Equal(t, "default", got.Name)
	require.Equal(t, []int{9}, got.List)
	require.Equal(t, int8(1), got.Small)
}

func TestPluginDecodeProblems(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{"unknown key", `nope = 1`, `d.conf:2: inputs.x.nope: unknown key`},
		{"skipped field is unknown", `Skipped = "x"`, `d.conf:2: inputs.x.Skipped: unknown key`},
		{"int range", `small = 300`, `d.conf:2: inputs.x.small: 300 is out of range (-128 to 127)`},
		{"uint negative", `unsigned = -1`, `d.conf:2: inputs.x.unsigned: must not be negative`},
		{"uint range", `unsigned = 256`, `d.conf:2: inputs.x.unsigned: 256 is out of range (0 to 255)`},
		{"float from string", `float = "x"`, `d.conf:2: inputs.x.float: expected a number, got a string`},
		{"std duration int", `std = 5`, `d.conf:2: inputs.x.std: expected a duration string like "10s", got an integer`},
		{"std duration bad", `std = "5 s"`, `d.conf:2: inputs.x.std: invalid duration "5 s": write it like "10s", "1m" or "500ms"`},
		{"text unmarshaler non-string", `prec = 1`, `d.conf:2: inputs.x.prec: expected a string, got an integer`},
		{"datetime", `when = "yesterday"`, `d.conf:2: inputs.x.when: expected a datetime, got a string`},
		{"array length", `pair = ["a"]`, `d.conf:2: inputs.x.pair: expected an array of 2 elements, got 1`},
		{"array element", "list = [\n  1,\n  \"2\",\n]", `d.conf:4: inputs.x.list[1]: expected an integer, got a string`},
		{"map value", `map = { x = "1" }`, `d.conf:2: inputs.x.map.x: expected an integer, got a string`},
		{"map not table", `map = 1`, `d.conf:2: inputs.x.map: expected a table, got an integer`},
		{"struct not table", `sub = 1`, `d.conf:2: inputs.x.sub: expected a table, got an integer`},
		{"nested unknown", "[inputs.x.sub]\n  a = 1\n  c = 2", `d.conf:4: inputs.x.sub.c: unknown key`},
		{"array of tables", "[[inputs.x.subs]]\n  a = 1\n[[inputs.x.subs]]\n  a = \"2\"", `d.conf:5: inputs.x.subs[1].a: expected an integer, got a string`},
		{"pointer", `ptr = "x"`, `d.conf:2: inputs.x.ptr: expected an integer, got a string`},
		{
			"several at once", "name = 1\nsmall = \"x\"\nnope = 2",
			"d.conf:2: inputs.x.name: expected a string, got an integer\n" +
				"d.conf:3: inputs.x.small: expected an integer, got a string\n" +
				"d.conf:4: inputs.x.nope: unknown key",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got decodeTarget
			errs := decodeText(t, tt.text, &got)
			require.EqualError(t, errs, tt.want)
		})
	}
}

func TestPluginDecodeWithoutOptions(t *testing.T) {
	f, err := Read(Options{Sources: []Source{{Name: "n.conf", Data: []byte("[[outputs.x]]\n  a = 1\n  b = 2\n")}}})
	require.NoError(t, err)
	errs := f.Outputs[0].Decode(nil)
	require.EqualError(t, errs, "n.conf:2: outputs.x.a: unknown key\nn.conf:3: outputs.x.b: unknown key")

	// A plugin whose table holds only shared options decodes into anything.
	f, err = Read(Options{Sources: []Source{{Name: "n.conf", Data: []byte("[[outputs.x]]\n  alias = \"a\"\n")}}})
	require.NoError(t, err)
	require.Empty(t, f.Outputs[0].Decode(nil))
}

func TestPluginKeyLine(t *testing.T) {
	text := strings.Join([]string{
		"[[inputs.x]]",     // 1
		"  a = 1",          // 2
		"[[inputs.x]]",     // 3
		"  fieldpass = []", // 4
		"  [inputs.x.sub]", // 5
		"    b = 2",        // 6
	}, "\n")
	f, err := Read(Options{Sources: []Source{{Name: "k.conf", Data: []byte(text)}}})
	require.NoError(t, err)
	first, second := f.Inputs[0], f.Inputs[1]
	require.Equal(t, 2, first.KeyLine("a"))
	require.Equal(t, 1, first.KeyLine("missing"))
	require.Equal(t, 1, first.KeyLine(""))
	require.Equal(t, 3, second.KeyLine("a"))
	require.Equal(t, 6, second.KeyLine("sub.b"))
	require.Equal(t, 5, second.KeyLine("sub.c"))
	// A problem found in FieldInclude points at the older name that the table used.
	require.Equal(t, 4, second.KeyLine("fieldinclude"))
	require.Equal(t, "inputs.x.fieldpass", second.Errorf("fieldinclude", "x").Key)
	require.Equal(t, "k.conf:3", second.Source())
}
