package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/morse-agent/morse/config"
)

// The values of --watch-config. Telegraf 1.39.3 documents "notify" and "poll" and treats
// any value but "poll" as inotify; morse takes "notify" and "inotify" for it and refuses
// others, so that a typo is not a silent inotify.
const (
	watchNotify  = "notify"
	watchInotify = "inotify"
	watchPoll    = "poll"
)

// defaultWatchInterval is how often --watch-config poll looks, as Telegraf's poll watcher.
const defaultWatchInterval = 250 * time.Millisecond

// configWatcher tells when a config file or directory of --config and --config-directory
// changed, as Telegraf's --watch-config does: the agent then reloads as on SIGHUP. Changes
// that come while a reload runs are folded into one more reload. With a debounce interval
// (--watch-debounce-interval), a change is told only once no other has come for that long,
// so that a config manager's many writes make one reload of the finished files.
type configWatcher struct {
	changed chan struct{}
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// watchConfigFiles starts the watcher --watch-config asks for, or returns nil for none
// (a nil watcher's Changed never receives). Without --config or --config-directory the
// built-in config runs, and there is nothing to watch: that is refused.
func watchConfigFiles(opts *options, log *slog.Logger) (*configWatcher, error) {
	if opts.watchConfig == "" {
		return nil, nil
	}
	if len(opts.configs) == 0 && len(opts.configDirs) == 0 {
		return nil, fmt.Errorf("--watch-config: no --config or --config-directory to watch")
	}
	return startConfigWatcher(opts.watchConfig, opts.watchEvery, opts.watchDebounce, opts.configs, opts.configDirs, log)
}

// startConfigWatcher watches files and dirs by mode ("notify", "inotify" or "poll"),
// telling a change once none has come for debounce (at once for 0).
func startConfigWatcher(mode string, interval, debounce time.Duration, files, dirs []string, log *slog.Logger) (*configWatcher, error) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &configWatcher{changed: make(chan struct{}, 1), stop: cancel}
	signal := w.signal
	var changes chan struct{} // the debouncer's input, for debounce > 0
	if debounce > 0 {
		changes = make(chan struct{}, 1)
		signal = func() { notifyOnce(changes) }
	}
	var run func()
	switch mode {
	case watchNotify, watchInotify:
		nw, err := newNotifyWatch(files, dirs)
		if err != nil {
			cancel()
			return nil, err
		}
		run = func() { nw.run(ctx, signal, log) }
	case watchPoll:
		if interval <= 0 {
			interval = defaultWatchInterval
		}
		first := snapshot(files, dirs) // now, so that a change right after start is seen
		run = func() { pollConfig(ctx, interval, first, files, dirs, signal) }
	default:
		cancel()
		return nil, fmt.Errorf("--watch-config %q: must be %q (or %q) or %q", mode, watchNotify, watchInotify, watchPoll)
	}
	log.Info("config watcher started", "method", mode, "files", strings.Join(append(slices.Clone(files), dirs...), ","), "debounce", debounce)
	w.done.Go(run)
	if debounce > 0 {
		w.done.Go(func() { w.debounce(ctx, changes, debounce, log) })
	}
	return w, nil
}

// debounce tells a change on changes once no other has come for d, as Telegraf's
// --watch-debounce-interval: each change restarts the wait.
func (w *configWatcher) debounce(ctx context.Context, changes <-chan struct{}, d time.Duration, log *slog.Logger) {
	t := time.NewTimer(d)
	t.Stop()
	defer t.Stop()
	var fire <-chan time.Time // nil while no change waits
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			t.Reset(d) // since Go 1.23 a Reset timer never delivers an earlier expiry
			fire = t.C
		case <-fire:
			fire = nil
			log.Info("config unchanged for the debounce interval; reloading", "interval", d)
			w.signal()
		}
	}
}

// signal marks a change; a change already marked is not marked twice.
func (w *configWatcher) signal() { notifyOnce(w.changed) }

// notifyOnce sends on c, a channel of capacity one, unless a send already waits there.
func notifyOnce(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Changed receives once per batch of changes; nil for no watcher.
func (w *configWatcher) Changed() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.changed
}

// Close stops the watcher and waits for its goroutine.
func (w *configWatcher) Close() {
	if w == nil {
		return
	}
	w.stop()
	w.done.Wait()
}

// notifyWatch watches with inotify. A file is watched through its directory, so that an
// editor's or a config manager's save by rename, which replaces the file, is still seen.
type notifyWatch struct {
	w     *fsnotify.Watcher
	files map[string]bool // cleaned paths of --config files
	dirs  map[string]bool // cleaned paths of --config-directory directories
}

func newNotifyWatch(files, dirs []string) (*notifyWatch, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("--watch-config: %w", err)
	}
	nw := &notifyWatch{w: fw, files: map[string]bool{}, dirs: map[string]bool{}}
	watch := map[string]bool{}
	for _, f := range files {
		f = filepath.Clean(f)
		nw.files[f] = true
		watch[filepath.Dir(f)] = true
	}
	for _, d := range dirs {
		d = filepath.Clean(d)
		nw.dirs[d] = true
		watch[d] = true
	}
	for p := range watch {
		if err := fw.Add(p); err != nil {
			_ = fw.Close()
			return nil, fmt.Errorf("--watch-config: watching %s: %w", p, err)
		}
	}
	return nw, nil
}

func (nw *notifyWatch) run(ctx context.Context, signal func(), log *slog.Logger) {
	defer nw.w.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-nw.w.Events:
			if !ok {
				return
			}
			if nw.relevant(ev) {
				log.Info("config changed; reloading", "file", ev.Name, "op", ev.Op.String())
				signal()
			}
		case err, ok := <-nw.w.Errors:
			if !ok {
				return
			}
			log.Warn("config watcher", "error", err)
		}
	}
}

// relevant reports whether ev changed a watched file or a config file of a watched
// directory; a change of its mode alone is not one.
func (nw *notifyWatch) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Clean(ev.Name)
	return nw.files[name] || nw.dirs[filepath.Dir(name)] && isConfigName(filepath.Base(name))
}

// isConfigName is Telegraf's test of a file in a config directory: a name of at least six
// characters that ends in ".conf".
func isConfigName(name string) bool {
	return len(name) >= 6 && strings.HasSuffix(name, ".conf")
}

// pollConfig compares a snapshot of the files with the last one every interval and
// signals a difference.
func pollConfig(ctx context.Context, interval time.Duration, last map[string]fileState, files, dirs []string, signal func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := snapshot(files, dirs)
			if !sameFiles(last, now) {
				signal()
			}
			last = now
		}
	}
}

// fileState is what poll compares: a file's size and modification time, or that it is
// missing.
type fileState struct {
	size  int64
	mtime time.Time
}

func snapshot(files, dirs []string) map[string]fileState {
	s := map[string]fileState{}
	add := func(path string) {
		if fi, err := os.Stat(path); err == nil {
			s[path] = fileState{size: fi.Size(), mtime: fi.ModTime()}
		} else {
			s[path] = fileState{size: -1}
		}
	}
	for _, f := range files {
		add(f)
	}
	for _, d := range dirs {
		list, _ := config.DirFiles(d) // an unreadable directory has no files to compare
		for _, f := range list {
			add(f)
		}
	}
	return s
}

func sameFiles(a, b map[string]fileState) bool {
	return maps.EqualFunc(a, b, func(x, y fileState) bool { return x.size == y.size && x.mtime.Equal(y.mtime) })
}
