package testutil

import (
	"fmt"
	"testing"

	"github.com/BurntSushi/toml"
)

// DecodeTable decodes the [[kind.name]] table of a TOML text, such as a plugin's
// sample.conf, into fresh, a plugin with its defaults set, and returns it. It fails the test
// on a key of that table that no field takes, as morse's config loader refuses one. The
// text should hold one such table; other tables are ignored.
func DecodeTable[T any](t testing.TB, text, kind, name string, fresh T) T {
	t.Helper()
	var doc map[string]map[string][]toml.Primitive
	md, err := toml.Decode(text, &doc)
	if err != nil {
		t.Fatalf("decoding the config: %v", err)
	}
	tables := doc[kind][name]
	if len(tables) == 0 {
		t.Fatalf("the config has no [[%s.%s]]", kind, name)
	}
	if err := md.PrimitiveDecode(tables[0], fresh); err != nil {
		t.Fatalf("decoding [[%s.%s]]: %v", kind, name, err)
	}
	var unknown []toml.Key
	for _, k := range md.Undecoded() {
		if len(k) > 2 && k[0] == kind && k[1] == name {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		t.Fatalf("unknown keys: %s", fmt.Sprint(unknown))
	}
	return fresh
}
