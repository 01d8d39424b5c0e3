//go:build !linux

package procstat

import "context"

// addMemoryMaps adds nothing: Telegraf reads memory maps on Linux only.
func (*proc) addMemoryMaps(context.Context, *fields) {}
