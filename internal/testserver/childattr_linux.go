package testserver

import "syscall"

// childAttr makes the kernel kill a server the test started when the test
// process dies first (a timeout panic, kill -9), so that none outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
