package diskio

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Paths are the directories the plugin reads device metadata from. Empty fields follow
// Telegraf's environment variables (HOST_DEV, HOST_RUN, HOST_SYS, HOST_ROOT,
// HOST_MOUNT_PREFIX) and fall back to /dev, /run and /sys.
type Paths struct {
	Dev string // the device nodes, /dev
	Run string // udev's database below udev/data, /run
	Sys string // sysfs, /sys
}

func (p Paths) withDefaults() Paths {
	root := "/"
	if prefix := os.Getenv("HOST_MOUNT_PREFIX"); prefix != "" {
		root = prefix
	}
	if r := os.Getenv("HOST_ROOT"); r != "" {
		root = r
	}
	pick := func(set, env, dir string) string {
		if set != "" {
			return set
		}
		if v := os.Getenv(env); v != "" {
			return v
		}
		return filepath.Join(root, dir)
	}
	return Paths{Dev: pick(p.Dev, "HOST_DEV", "dev"), Run: pick(p.Run, "HOST_RUN", "run"), Sys: pick(p.Sys, "HOST_SYS", "sys")}
}

// devLinks returns the device's /dev links without "/dev/", for matching device globs.
func devLinks(info map[string]string) []string {
	var out []string
	for _, l := range strings.Fields(info["DEVLINKS"]) {
		out = append(out, strings.TrimPrefix(l, "/dev/"))
	}
	return out
}

var templateVar = regexp.MustCompile(`\$(?:\w+|\{\w+\})`)

// nameFromTemplates applies the first template whose variables all exist for the device;
// without one the kernel name stays.
func nameFromTemplates(templates []string, info map[string]string, fallback string) string {
	for _, t := range templates {
		missing := false
		name := templateVar.ReplaceAllStringFunc(t, func(v string) string {
			key := strings.Trim(v[1:], "{}")
			val, ok := info[key]
			if !ok {
				missing = true
			}
			return val
		})
		if !missing {
			return name
		}
	}
	return fallback
}
