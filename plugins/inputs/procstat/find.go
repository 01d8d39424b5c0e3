package procstat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/shirou/gopsutil/v4/process"
)

// group is the result of one search: the PIDs found and the tags that say how.
type group struct {
	pids []int32
	tags map[string]string
}

// pidFinder finds PIDs by executable name, full command line or user, and the children
// of a process.
type pidFinder interface {
	pattern(ctx context.Context, pattern string) ([]int32, error)
	fullPattern(ctx context.Context, pattern string) ([]int32, error)
	uid(ctx context.Context, user string) ([]int32, error)
	children(ctx context.Context, pid int32) ([]int32, error)
}

// find runs the selector, in Telegraf's order of precedence.
func (p *Procstat) find(ctx context.Context) ([]group, error) {
	one := func(tag, value string, pids []int32, err error) ([]group, error) {
		return []group{{pids: pids, tags: map[string]string{tag: value}}}, err
	}
	switch {
	case len(p.supervisorUnits()) > 0:
		return p.supervisorGroups(ctx)
	case p.SystemdUnit != "":
		return p.systemdGroups(ctx)
	case p.WinService != "":
		return one("win_service", p.WinService, nil, nil)
	case p.CGroup != "":
		return p.cgroupGroups(p.CGroup, p.CGroup)
	case p.PidFile != "":
		pids, err := pidFile(p.PidFile)
		return one("pidfile", p.PidFile, pids, err)
	case p.Exe != "":
		pids, err := p.finder.pattern(ctx, p.Exe)
		return one("exe", p.Exe, pids, err)
	case p.Pattern != "":
		pids, err := p.finder.fullPattern(ctx, p.Pattern)
		return one("pattern", p.Pattern, pids, err)
	case p.User != "":
		pids, err := p.finder.uid(ctx, p.User)
		return one("user", p.User, pids, err)
	}
	// With no selector the input watches the agent itself, so a bare [[inputs.procstat]]
	// is a useful config rather than an invalid one.
	return []group{{pids: []int32{int32(os.Getpid())}, tags: map[string]string{}}}, nil
}

// pidFile reads the PID a daemon wrote.
func pidFile(path string) ([]int32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read pidfile %q: %w", path, err)
	}
	pid, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("failed to parse PID in file %q: %w", path, err)
	}
	return []int32{int32(pid)}, nil
}

// pgrepFinder asks the pgrep executable, as Telegraf's default finder does.
type pgrepFinder struct{ path string }

func (f pgrepFinder) pattern(ctx context.Context, pattern string) ([]int32, error) {
	return f.run(ctx, pattern)
}

func (f pgrepFinder) fullPattern(ctx context.Context, pattern string) ([]int32, error) {
	return f.run(ctx, "-f", pattern)
}

func (f pgrepFinder) uid(ctx context.Context, user string) ([]int32, error) {
	return f.run(ctx, "-u", user)
}

func (f pgrepFinder) children(ctx context.Context, pid int32) ([]int32, error) {
	return f.run(ctx, "-P", strconv.Itoa(int(pid)))
}

func (f pgrepFinder) run(ctx context.Context, args ...string) ([]int32, error) {
	out, err := exec.CommandContext(ctx, f.path, args...).Output()
	if err != nil {
		// Exit status 1 means that no process matched, which is not an error.
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return nil, nil
		}
		return nil, fmt.Errorf("error running %q: %w", f.path, err)
	}
	return parsePIDs(out)
}

// parsePIDs reads whitespace-separated PIDs.
func parsePIDs(out []byte) ([]int32, error) {
	words := bytes.Fields(out)
	pids := make([]int32, 0, len(words))
	for _, w := range words {
		pid, err := strconv.ParseInt(string(w), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("invalid pid %q", w)
		}
		pids = append(pids, int32(pid))
	}
	return pids, nil
}

// nativeFinder searches the process table itself: exe is a regular expression on the
// process name, pattern on the full command line, and user is the owner's name, as in
// Telegraf's native finder. It never finds the agent's own process.
type nativeFinder struct{}

func (nativeFinder) match(ctx context.Context, keep func(*process.Process) bool) ([]int32, error) {
	procs, err := process.ProcessesWithContext(ctx)
	if err != nil {
		return nil, err
	}
	self := int32(os.Getpid())
	var pids []int32
	for _, pr := range procs {
		if pr.Pid != self && keep(pr) {
			pids = append(pids, pr.Pid)
		}
	}
	return pids, nil
}

func (f nativeFinder) pattern(ctx context.Context, pattern string) ([]int32, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return f.match(ctx, func(pr *process.Process) bool {
		name, err := pr.NameWithContext(ctx)
		return err == nil && re.MatchString(name)
	})
}

func (f nativeFinder) fullPattern(ctx context.Context, pattern string) ([]int32, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return f.match(ctx, func(pr *process.Process) bool {
		cmd, err := pr.CmdlineWithContext(ctx)
		return err == nil && re.MatchString(cmd)
	})
}

func (nativeFinder) children(ctx context.Context, pid int32) ([]int32, error) {
	pr, err := process.NewProcessWithContext(ctx, pid)
	if err != nil {
		return nil, err
	}
	kids, err := pr.ChildrenWithContext(ctx)
	if errors.Is(err, process.ErrorNoChildren) {
		return nil, nil
	}
	pids := make([]int32, 0, len(kids))
	for _, k := range kids {
		pids = append(pids, k.Pid)
	}
	return pids, err
}

func (f nativeFinder) uid(ctx context.Context, user string) ([]int32, error) {
	return f.match(ctx, func(pr *process.Process) bool {
		name, err := pr.UsernameWithContext(ctx)
		return err == nil && name == user
	})
}

// cgroupGroups lists the processes of the control groups that match name, a path or a
// glob, absolute or relative to /sys/fs/cgroup. tag is the value of the cgroup tag.
func (p *Procstat) cgroupGroups(name, tag string) ([]group, error) {
	path := name
	if !filepath.IsAbs(path) {
		root := p.cgroupRoot
		if root == "" {
			root = "/sys/fs/cgroup"
		}
		path = filepath.Join(root, path)
	}
	dirs, err := filepath.Glob(path)
	if err != nil {
		return nil, fmt.Errorf("glob failed: %w", err)
	}
	groups := make([]group, 0, len(dirs))
	for _, dir := range dirs {
		pids, err := cgroupPIDs(dir)
		if err != nil {
			return nil, err
		}
		groups = append(groups, group{pids: pids, tags: map[string]string{"cgroup": tag, "cgroup_full": dir}})
	}
	return groups, nil
}

func cgroupPIDs(dir string) ([]int32, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("not a directory %s", dir)
	}
	out, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	return parsePIDs(out)
}
