// Package hostfs finds the host's /proc and /sys as Telegraf's inputs do: when the agent runs
// in a container with the host's file systems mounted elsewhere, $HOST_PROC and $HOST_SYS
// name where.
package hostfs

import (
	"os"
	"path/filepath"
)

// Proc returns the path of elem under $HOST_PROC, or under /proc when it is unset.
func Proc(elem ...string) string { return under("HOST_PROC", "/proc", elem) }

// Sys returns the path of elem under $HOST_SYS, or under /sys when it is unset.
func Sys(elem ...string) string { return under("HOST_SYS", "/sys", elem) }

func under(env, dflt string, elem []string) string {
	root := os.Getenv(env)
	if root == "" {
		root = dflt
	}
	return filepath.Join(append([]string{root}, elem...)...)
}
