//go:build linux

package mem

import (
	"context"

	"github.com/shirou/gopsutil/v4/mem"

	"github.com/morse-agent/morse"
)

// extendedSupported says whether collect_extended can work on this platform.
const extendedSupported = true

// readExtended reads the fields of Telegraf's collect_extended on Linux.
func readExtended(ctx context.Context) ([]morse.Field, error) {
	ex, err := mem.NewExLinux().VirtualMemoryWithContext(ctx)
	if err != nil {
		return nil, err
	}
	return []morse.Field{
		num("active_anon", ex.ActiveAnon),
		num("active_file", ex.ActiveFile),
		num("inactive_anon", ex.InactiveAnon),
		num("inactive_file", ex.InactiveFile),
		num("percpu", ex.Percpu),
		num("unevictable", ex.Unevictable),
	}, nil
}
