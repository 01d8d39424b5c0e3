//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package socketlistener

import "syscall"

// canReusePort reports that this system has no SO_REUSEPORT, so one socket reads a UDP port.
const canReusePort = false

// reusePort is never called where canReusePort is false.
func reusePort(_, _ string, _ syscall.RawConn) error { return nil }
