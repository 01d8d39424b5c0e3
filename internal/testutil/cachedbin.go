package testutil

import (
	"fmt"
	"os"
	"path/filepath"
)

// CachedBinary is the path of a server binary that a scripts/ensure-*.sh put in morse's
// cache, ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/DIR/VERSION/NAME, or $ENV
// when that is set. The error names the script to run when the file is missing. The test
// launchers (internal/testserver) and the benchmark harnesses (bench/) both find their
// servers here, so that they run the same binaries.
func CachedBinary(env, dir, version, name, script string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	cache := os.Getenv("MORSE_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(base, "morse")
	}
	p := filepath.Join(cache, dir, version, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: run %s (make test-deps) to install %s %s", err, script, name, version)
	}
	return p, nil
}
