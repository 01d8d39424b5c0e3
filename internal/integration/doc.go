// Package integration holds end-to-end tests that run a whole morse Agent against real
// servers started by internal/testserver. It has no code of its own.
package integration
