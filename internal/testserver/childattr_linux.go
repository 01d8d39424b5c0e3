package testserver

import (
	"os"
	"syscall"
)

// childAttr makes the kernel kill a server the test started when the test
// process dies first (a timeout panic, kill -9), so that none outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// familyAttr is childAttr for a server that forks workers (php-fpm): as root, the server
// starts as the first process of a PID namespace of its own, so that the kernel kills its
// workers too when it dies, however it dies. Without root there is no such namespace, and
// the test's cleanup stops the server, which stops its workers.
func familyAttr() *syscall.SysProcAttr {
	a := childAttr()
	if os.Geteuid() == 0 {
		a.Cloneflags = syscall.CLONE_NEWPID
	}
	return a
}
