package testutil

import (
	"context"
	"testing"
	"time"
)

// Context returns a context that ends after 30 s, or when the test's cleanups have run, so
// that a call that blocks on a server fails the test well inside go test's own timeout
// rather than hanging it. Unlike t.Context, it still holds in the test's cleanups, which may
// use it to close what the test opened.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
