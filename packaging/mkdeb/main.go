// Command mkdeb builds morse's Debian package from a built binary and the files under
// packaging/, with Debian's own dpkg-deb, so that nothing beyond dpkg is needed:
//
//	go run ./packaging/mkdeb --binary bin/morse --out bin
//
// The version comes from git (see debianVersion) unless --version gives it. `make deb`
// runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

func main() {
	var o buildOptions
	flag.StringVar(&o.Binary, "binary", "bin/morse", "the morse `binary` to package")
	flag.StringVar(&o.OutDir, "out", "bin", "the `directory` the .deb is written to")
	flag.StringVar(&o.Repo, "repo", ".", "the repository's root `directory`, holding packaging/ and docs/")
	flag.StringVar(&o.Version, "version", "", "the Debian `version`; derived from git when empty")
	describe := flag.String("describe", "", "`git describe --tags --always --dirty` output to derive the version from; git is run when empty")
	flag.Parse()
	ctx := context.Background()
	if err := run(ctx, &o, *describe); err != nil {
		fmt.Fprintln(os.Stderr, "mkdeb:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *buildOptions, describe string) error {
	if o.Version == "" {
		v, err := versionFromGit(ctx, o.Repo, describe)
		if err != nil {
			return err
		}
		o.Version = v
	}
	path, err := buildPackage(ctx, *o)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// versionFromGit derives the Debian version from git describe (given, or run here) and,
// for a history with no tag, the number of commits.
func versionFromGit(ctx context.Context, repo, describe string) (string, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...).Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if describe == "" {
		d, err := git("describe", "--tags", "--always", "--dirty")
		if err != nil {
			return "", err
		}
		describe = d
	}
	count, err := git("rev-list", "--count", "HEAD")
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(count)
	if err != nil {
		return "", fmt.Errorf("git rev-list --count: %q: %w", count, err)
	}
	return debianVersion(describe, n)
}
