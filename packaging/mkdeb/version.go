package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// describeRE splits `git describe --tags --always --dirty` output: an optional tag with its
// distance and abbreviated commit, or the commit alone when no tag is reachable, then the
// optional -dirty mark.
var describeRE = regexp.MustCompile(`^(?:(.+)-(\d+)-g([0-9a-f]+)|(.+?))(-dirty)?$`)

// tagRE is a release tag: v1.2.3, optionally with a pre-release such as -rc1 or -beta.2.
var tagRE = regexp.MustCompile(`^v?(\d+(?:\.\d+)*)(?:-([0-9A-Za-z.]+))?$`)

// hashRE is an abbreviated commit, what --always prints when no tag is reachable.
var hashRE = regexp.MustCompile(`^[0-9a-f]{4,40}$`)

// debianVersionRE is what this package's versions may be: an upstream version with no
// epoch and no Debian revision, so no colon and no hyphen (deb-version(7)).
var debianVersionRE = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)

// debianVersion maps `git describe --tags --always --dirty` to a Debian version that sorts
// the way the builds were made, so that installing a later build is an upgrade:
//
//	v1.2.3                  1.2.3
//	v1.2.3-rc1              1.2.3~rc1             (a pre-release sorts before its release)
//	v1.2.3-5-gabc1234       1.2.3+git5.gabc1234   (5 commits after the tag)
//	abc1234                 0.0.0+git55.gabc1234  (no tag: commits is the history's length)
//	...-dirty               ...+dirty             (uncommitted changes)
//
// commits is `git rev-list --count HEAD`, used only when no tag is reachable.
func debianVersion(describe string, commits int) (string, error) {
	m := describeRE.FindStringSubmatch(strings.TrimSpace(describe))
	if m == nil {
		return "", fmt.Errorf("git describe %q: not a version", describe)
	}
	tag, distance, hash, bare, dirty := m[1], m[2], m[3], m[4], m[5] != ""
	if tag == "" && hashRE.MatchString(bare) {
		if commits <= 0 {
			return "", fmt.Errorf("git describe %q has no tag, and the commit count %d cannot order it", describe, commits)
		}
		tag, distance, hash = "0.0.0", strconv.Itoa(commits), bare
	} else if tag == "" {
		tag = bare
	}
	t := tagRE.FindStringSubmatch(tag)
	if t == nil {
		return "", fmt.Errorf("git describe %q: tag %q is not a version such as v1.2.3", describe, tag)
	}
	v := t[1]
	if t[2] != "" {
		v += "~" + t[2]
	}
	if distance != "" {
		v += "+git" + distance + ".g" + hash
	}
	if dirty {
		v += "+dirty"
	}
	if !debianVersionRE.MatchString(v) {
		return "", fmt.Errorf("git describe %q maps to %q, not a valid Debian version", describe, v)
	}
	return v, nil
}
