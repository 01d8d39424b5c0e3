package main

import (
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...", as `make build` does.
var version = ""

// versionString is the version to print: the one ldflags set, or else what the Go toolchain
// recorded in the binary. `go install module@v1.2.3` records the module version; a build in
// a git checkout records the VCS revision and whether the tree was modified. Only a build
// with neither, such as `go run` outside a checkout, says "dev".
func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(info)
}

func fromBuildInfo(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	mod := info.Main.Version
	if mod == "(devel)" {
		mod = ""
	}
	rev := settings["vcs.revision"]
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && settings["vcs.modified"] == "true" {
		rev += "-dirty"
	}
	switch {
	case mod != "" && rev != "" && !strings.Contains(mod, rev[:min(len(rev), 12)]):
		return mod + " (" + rev + ")"
	case mod != "":
		return mod
	case rev != "":
		return rev
	}
	return "dev"
}
