package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// testVersion is the version of the package TestMain builds.
const testVersion = "1.2.3~test1"

var (
	repoRoot   string // the repository's root
	testBinary string // morse, built as `make build` builds it
	testDeb    string // the package built from it
)

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := buildForTests(m)
	if err != nil {
		panic(err)
	}
	os.Exit(code)
}

func buildForTests(m *testing.M) (int, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return 0, err
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "mkdeb-test")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	testBinary = filepath.Join(dir, "morse")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testutil.BuildMorse(ctx, testBinary, "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion); err != nil {
		return 0, err
	}
	testDeb, err = buildPackage(ctx, buildOptions{Binary: testBinary, OutDir: dir, Repo: repoRoot, Version: testVersion})
	if err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func dpkgDeb(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", args...).CombinedOutput()
	require.NoError(t, err, "dpkg-deb %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// requireGolden compares got with testdata/NAME, or rewrites it under -update.
func requireGolden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), []byte(got))
}

// TestPackageContents: every path, its mode and owner, as `dpkg-deb -c` lists them; sizes
// and dates vary from build to build and are left out.
func TestPackageContents(t *testing.T) {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(dpkgDeb(t, "-c", testDeb)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 6, line)
		lines = append(lines, f[0]+" "+f[1]+" "+f[5])
	}
	sort.Strings(lines)
	requireGolden(t, "contents.golden", strings.Join(lines, "\n")+"\n")
}

// TestPackageControl: the control fields, the conffiles, and the maintainer scripts as the
// repository holds them, executable and valid sh.
func TestPackageControl(t *testing.T) {
	info := dpkgDeb(t, "-I", testDeb)
	for _, member := range []string{
		`conffiles`, `control`, `md5sums`,
		`\*  postinst\s+#!/bin/sh`, `\*  postrm\s+#!/bin/sh`, `\*  prerm\s+#!/bin/sh`,
	} {
		require.Regexp(t, regexp.MustCompile(`(?m)^\s+\d+ bytes,\s+\d+ lines\s+`+member), info)
	}
	fields := map[string]string{
		"Package": "morse", "Version": testVersion, "Architecture": "amd64",
		"Depends": "systemd | systemd-standalone-sysusers | systemd-sysusers",
	}
	for k, want := range fields {
		require.Equal(t, want, strings.TrimSpace(dpkgDeb(t, "-f", testDeb, k)), k)
	}
	require.Regexp(t, `^\d+$`, strings.TrimSpace(dpkgDeb(t, "-f", testDeb, "Installed-Size")))

	ctrl := t.TempDir()
	dpkgDeb(t, "-e", testDeb, ctrl)
	conff, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	require.NoError(t, err)
	require.Equal(t, "/etc/logrotate.d/morse\n/etc/morse/morse.conf\n", string(conff))
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		got, err := os.ReadFile(filepath.Join(ctrl, script))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(repoRoot, "packaging/deb", script))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), script)
		st, err := os.Stat(filepath.Join(ctrl, script))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), script)
		out, err := exec.Command("sh", "-n", filepath.Join(ctrl, script)).CombinedOutput()
		require.NoError(t, err, "%s: %s", script, out)
	}

	// md5sums holds every file but the conffiles, and each sum matches.
	root := t.TempDir()
	dpkgDeb(t, "-x", testDeb, root)
	sums, err := os.ReadFile(filepath.Join(ctrl, "md5sums"))
	require.NoError(t, err)
	for _, c := range conffiles {
		require.NotContains(t, string(sums), strings.TrimPrefix(c, "/"))
	}
	require.Contains(t, string(sums), "  usr/bin/morse\n")
	check := exec.Command("md5sum", "--check", "--strict", filepath.Join(ctrl, "md5sums"))
	check.Dir = root
	out, err := check.CombinedOutput()
	require.NoError(t, err, string(out))
}

// TestPackagedConfigRuns: the package's own files, as installed, run: the default config
// and its empty config directory load, and every input in it gathers.
func TestPackagedConfigRuns(t *testing.T) {
	root := t.TempDir()
	dpkgDeb(t, "-x", testDeb, root)
	conf, err := os.ReadFile(filepath.Join(root, "etc/morse/morse.conf"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(conf), "# /etc/morse/morse.conf: the config the morse service runs."))
	require.Contains(t, string(conf), "\n"+defaultFiles+"\n", "the file output writes to the state directory")
	require.Equal(t, 1, strings.Count(string(conf), "\n[[outputs."), "one output")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "usr/bin/morse"),
		"--config", filepath.Join(root, "etc/morse/morse.conf"),
		"--config-directory", filepath.Join(root, "etc/morse/morse.d"), "--test")
	out, err := cmd.Output()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "> "), ",") // --test prints "> " first, as Telegraf
		seen[name] = true
	}
	for _, input := range strings.Split(defaultInputs, ":") {
		if input == "internal" {
			input = "internal_gather"
		}
		require.True(t, seen[input], "the %s input gathered; got %v", input, seen)
	}

	version, err := exec.Command(filepath.Join(root, "usr/bin/morse"), "version").Output()
	require.NoError(t, err)
	require.Equal(t, "morse "+testVersion+"\n", string(version))
}
