// Package integration holds the cross-package integration tests: a whole morse Agent with
// several plugins (listeners, processors, the influxdb output) against real servers started
// by internal/testserver, where no one package is the subject. A test of one package stays
// beside that package. It has no code of its own.
package integration
