package testutil

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

type plugin struct {
	Name  string `toml:"name"`
	Count int    `toml:"count"`
	Kept  string `toml:"kept"`
}

func TestDecodeTable(t *testing.T) {
	p := DecodeTable(t, `
[[outputs.other]]
  name = "no"
[[outputs.x]]
  name = "yes"
  count = 3
`, "outputs", "x", &plugin{Kept: "default"})
	require.Equal(t, &plugin{Name: "yes", Count: 3, Kept: "default"}, p)
}

// An unknown key fails the test that decodes it.
func TestDecodeTableUnknownKey(t *testing.T) {
	ft := &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		DecodeTable(ft, "[[outputs.x]]\n  nope = 1\n", "outputs", "x", &plugin{})
	}()
	require.Contains(t, ft.msg, "unknown keys: [outputs.x.nope]")
}

// fakeTB records a Fatalf instead of failing, and stops the caller as Fatalf does.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
