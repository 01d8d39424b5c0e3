//go:build !linux

package mem

import (
	"context"
	"errors"

	"github.com/morse-agent/morse"
)

// extendedSupported says whether collect_extended can work on this platform.
const extendedSupported = false

// readExtended fails: Init turns collect_extended off here, so only code that skipped Init
// gets this far.
func readExtended(context.Context) ([]morse.Field, error) {
	return nil, errors.New("extended memory statistics are only available on Linux")
}
