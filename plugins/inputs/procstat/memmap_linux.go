//go:build linux

package procstat

import "context"

// addMemoryMaps adds the totals of /proc/PID/smaps, in kB as the kernel reports them.
func (pr *proc) addMemoryMaps(ctx context.Context, f *fields) {
	maps, err := pr.MemoryMapsWithContext(ctx, true)
	if err != nil || maps == nil || len(*maps) != 1 {
		return
	}
	m := (*maps)[0]
	f.num("memory_size", m.Size)
	f.num("memory_pss", m.Pss)
	f.num("memory_shared_clean", m.SharedClean)
	f.num("memory_shared_dirty", m.SharedDirty)
	f.num("memory_private_clean", m.PrivateClean)
	f.num("memory_private_dirty", m.PrivateDirty)
	f.num("memory_referenced", m.Referenced)
	f.num("memory_anonymous", m.Anonymous)
	f.num("memory_swap", m.Swap)
}
