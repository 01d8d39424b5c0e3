//go:build !linux

package testserver

import "syscall"

// childAttr has nothing to add where the kernel cannot tie a child's life to
// its parent's; the test's cleanup stops the server.
func childAttr() *syscall.SysProcAttr { return nil }

// familyAttr is childAttr for a server that forks workers; the test's cleanup stops it.
func familyAttr() *syscall.SysProcAttr { return nil }
