package diskq

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Sync forces what changed since the last sync to stable storage. It first checks that the
// directory and the queue's files are still in place, and writes back what was removed
// (see Restore).
func (q *Queue) Sync() error {
	q.mu.Lock()
	if !q.closed { // Close made its own last check
		q.checkDir()
	}
	claimErr := q.claim()
	files := q.unsynced
	q.unsynced = nil
	if q.posDirty {
		files = append(files, q.posf.f)
		q.posDirty = false
	}
	dir := q.dirDirty
	q.dirDirty = false
	q.mu.Unlock()
	errs := []error{claimErr}
	for _, f := range files {
		if err := q.syncFile(f); err != nil {
			errs = append(errs, fmt.Errorf("diskq: sync: %w", err))
		}
	}
	if dir {
		if err := q.fsyncDir(); err != nil {
			errs = append(errs, fmt.Errorf("diskq: sync directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (q *Queue) syncLoop(interval time.Duration) {
	defer close(q.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
			if q.opts.Sync == SyncNever {
				q.Check() // nothing to sync, but a removed directory is still noticed
				continue
			}
			_ = q.Sync() // a failing disk shows in the writes; the next tick tries again
		}
	}
}

// syncFile fsyncs f. A file may have been closed since it was written: Sync runs without
// the lock, so a restore (restore.go) may put a new file in its place even while it runs.
// fsync flushes the file, not the descriptor, so the file is opened again by name to sync
// what is there; one removed meanwhile (a consumed segment, an acknowledged lease) needs
// nothing.
func (q *Queue) syncFile(f *os.File) error {
	err := q.fsyncFile(f)
	if !errors.Is(err, os.ErrClosed) {
		return err
	}
	g, err := os.Open(f.Name())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer g.Close()
	return q.fsyncFile(g)
}
