package agent

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
)

// bufferFor returns the buffer constructor of oc's effective buffer_strategy: nil for the
// memory buffer, a disk buffer in a directory of its own under buffer_directory otherwise.
// The directory is returned too, for a reload that hands it from one writer to the next.
func (a *Agent) bufferFor(oc *config.OutputConfig) (func(int, batch.Eviction) (batch.Buffer, error), string, error) {
	bc := oc.Common.BufferConfig.Over(a.cfg.Agent.BufferConfig)
	if bc.Strategy != config.BufferDisk {
		return nil, "", nil // the writer bounds its memory buffer by memoryBounds
	}
	every, err := bc.SyncInterval()
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(bc.Directory, a.outputDir(oc))
	opts := batch.DiskOptions{
		Dir:      dir,
		MaxBytes: int64(bc.MaxBytes), MaxAge: time.Duration(bc.MaxAge),
		Sync: batch.DiskSyncInterval, SyncInterval: every,
		NewestFirst: bc.Drain == config.DrainNewestFirst,
		Logger:      pluginLogger(a.log, "outputs", oc.Name, oc.Common.Alias, oc.Common.LogLevel),
	}
	if every == 0 {
		opts.Sync = batch.DiskSyncNever
	}
	return batch.DiskBufferFactory(opts), dir, nil
}

// handOverDiskBuffers closes, at once, the running outputs that a reload replaces with an
// output using the same disk buffer directory: a directory is locked by its writer, and
// what the old one holds stays on disk for the new one to send. Closing without a final
// flush keeps the hand-over short; a metric that reaches the old writer meanwhile is
// counted as dropped under shutdown.
func (a *Agent) handOverDiskBuffers(old []*runningOutput, next []*runningOutput, kept []bool) {
	dirs := map[string]bool{}
	for i, ro := range next {
		if !kept[i] {
			if _, dir, err := a.bufferFor(ro.cfg); err == nil && dir != "" {
				dirs[dir] = true
			}
		}
	}
	for _, ro := range removed(old, next) {
		if ro.w != nil && ro.bufferDir != "" && dirs[ro.bufferDir] {
			_ = ro.w.Close(canceledContext())
		}
	}
}

// memoryBounds are buffer_max_bytes and buffer_max_age of oc, for its memory buffer.
func (a *Agent) memoryBounds(oc *config.OutputConfig) (int64, time.Duration) {
	bc := oc.Common.BufferConfig.Over(a.cfg.Agent.BufferConfig)
	return int64(bc.MaxBytes), time.Duration(bc.MaxAge)
}

var unsafeDirChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// outputDir names an output's own directory under buffer_directory so that it stays the
// same across restarts and reloads, and two outputs never share one: the alias when the
// output has one, else the plugin name and its place among the outputs of that plugin
// ("influxdb-1", "influxdb-2"). Give an output an alias to keep its directory however the
// config's other outputs move.
func (a *Agent) outputDir(oc *config.OutputConfig) string {
	if oc.Common.Alias != "" {
		return unsafeDirChars.ReplaceAllString(oc.Common.Alias, "_")
	}
	n := 0
	for _, o := range a.cfg.Outputs {
		if o.Name == oc.Name && o.Common.Alias == "" {
			n++
		}
		if o == oc {
			break
		}
	}
	return fmt.Sprintf("%s-%s", unsafeDirChars.ReplaceAllString(oc.Name, "_"), strconv.Itoa(n))
}
