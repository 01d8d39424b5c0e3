//go:build !linux

package mem

import (
	"context"
	"errors"

	"github.com/morse-agent/morse"
)

// extendedSupported says whether collect_extended can work on this platform.
const extendedSupported = false

// readExtended fails: Validate refuses collect_extended here, so only code that skipped
// validation gets this far.
func readExtended(context.Context) ([]morse.Field, error) {
	return nil, errors.New("extended memory statistics are only available on Linux")
}
