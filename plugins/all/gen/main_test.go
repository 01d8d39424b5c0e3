package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The committed files are what the generator writes: none missing, stale or left over.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	problems, err := Generate(filepath.Join("..", "..", ".."), true)
	require.NoError(t, err)
	require.Empty(t, problems, "run `go generate ./plugins/all`")
}

// The generator writes a file for each directory that registers a plugin, removes the
// generated files of plugins gone, and keeps hand-written files and helper packages alone.
func TestGenerateWritesAndRemoves(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		path = filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	for kind := range kinds {
		write(filepath.Join("plugins", kind, "all", "all.go"), "// Package all.\npackage all\n")
	}
	write("plugins/inputs/foo/foo.go", "package foo\nfunc init() { morse.RegisterInput(morse.InputInfo{}) }\n")
	write("plugins/inputs/helper/helper.go", "package helper\n")
	write("plugins/inputs/onlytest/x_test.go", "package onlytest\nfunc init() { morse.RegisterInput(morse.InputInfo{}) }\n")
	write("plugins/inputs/all/gone.go", header+"package all\n")

	problems, err := Generate(root, true)
	require.NoError(t, err)
	require.Len(t, problems, 2, "foo.go missing, gone.go left over: %v", problems)

	problems, err = Generate(root, false)
	require.NoError(t, err)
	require.Empty(t, problems)
	all := filepath.Join(root, "plugins", "inputs", "all")
	b, err := os.ReadFile(filepath.Join(all, "foo.go"))
	require.NoError(t, err)
	require.Equal(t, string(File("inputs", "foo")), string(b))
	require.Contains(t, string(b), "//go:build !custom || inputs || inputs.foo\n")
	entries, err := os.ReadDir(all)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"all.go", "foo.go"}, names)

	problems, err = Generate(root, true)
	require.NoError(t, err)
	require.Empty(t, problems)
}
