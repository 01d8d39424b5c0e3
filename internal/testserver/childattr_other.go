//go:build !linux

package testserver

import "syscall"

// childAttr has nothing to add where the kernel cannot tie a child's life to
// its parent's; the test's cleanup stops the server.
func childAttr() *syscall.SysProcAttr { return nil }
