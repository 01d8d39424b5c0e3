package batch

import (
	"time"

	"github.com/morse-agent/morse/internal/diskq"
	"github.com/morse-agent/morse/internal/throttle"
)

// restoreLogger returns the queue's OnRestore for the buffer: an error naming the directory
// when it was removed or replaced while in use, once when it is made again with what the
// buffer held, and at most once a minute while it cannot be. The queue keeps trying at each
// sync; what is still missing when the buffer closes is counted under morse.ReasonCorrupt.
// It runs under the queue's lock: it only logs.
func (b *DiskBuffer) restoreLogger() func(diskq.Restore) {
	failing := throttle.New(time.Minute)
	return func(r diskq.Restore) {
		if r.Err == nil {
			b.log.Error("disk buffer: its directory was removed or replaced while in use; made it again and wrote back what the buffer holds",
				"dir", r.Dir, "cause", r.Cause, "files", len(r.Files), "metrics", r.Items, "attempt", r.Attempt)
			return
		}
		if ok, suppressed := failing.Allow(b.opts.Now()); ok {
			b.log.Error("disk buffer: its directory was removed or replaced while in use, and cannot be made again; trying at each sync, what is still missing at shutdown is counted as corrupt",
				"dir", r.Dir, "cause", r.Cause, "metrics", r.Items, "attempt", r.Attempt, "error", r.Err,
				throttle.SuppressedKey, suppressed)
		}
	}
}
