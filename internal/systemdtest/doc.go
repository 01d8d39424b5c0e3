// Package systemdtest runs morse's Debian package under a real systemd: Debian bookworm's
// systemd 252 as PID 1 in a container built FROM scratch out of a debootstrapped root
// filesystem (scripts/systemd-rootfs.sh). Its tests build only with the "systemd" build
// tag, which `make test-systemd` sets: they need root, Docker and a few minutes, and a plain
// `go test ./...` has none of these to spare.
package systemdtest
