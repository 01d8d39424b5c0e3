package procstat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// systemdGroups finds the processes of systemd_unit: the unit's main process, read from
// `systemctl show` as Telegraf does, or with include_systemd_children every process of the
// unit's control group. systemctl is looked up in PATH on every gather, so that a missing
// systemd is a clean lookup error and a later install needs no restart.
func (p *Procstat) systemdGroups(ctx context.Context) ([]group, error) {
	unitTags := map[string]string{"systemd_unit": p.SystemdUnit}
	// Telegraf names the control group of a unit this way, and so tags it.
	cgroupTag := "systemd/system.slice/" + p.SystemdUnit
	if p.IncludeSystemdChildren && strings.ContainsAny(p.SystemdUnit, "*?[") {
		return p.cgroupGroups(cgroupTag, cgroupTag)
	}
	props, err := systemctlShow(ctx, p.SystemdUnit)
	if err != nil {
		return []group{{tags: unitTags}}, err
	}
	if p.IncludeSystemdChildren {
		return p.controlGroup(props["ControlGroup"], cgroupTag)
	}
	mainPID := props["MainPID"]
	if mainPID == "" || mainPID == "0" {
		// The unit exists but does not run: no processes, not an error.
		return []group{{tags: unitTags}}, nil
	}
	pid, err := strconv.ParseInt(mainPID, 10, 32)
	if err != nil {
		return []group{{tags: unitTags}}, fmt.Errorf("invalid MainPID %q of unit %q", mainPID, p.SystemdUnit)
	}
	return []group{{pids: []int32{int32(pid)}, tags: unitTags}}, nil
}

// controlGroup finds the directory of a unit's control group, in the unified hierarchy
// (cgroup v2) or in the systemd hierarchy of cgroup v1, and lists its processes. A unit
// that does not run has no control group and no processes.
func (p *Procstat) controlGroup(cg, tag string) ([]group, error) {
	if cg == "" {
		return nil, nil
	}
	root := p.cgroupRoot
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	for _, dir := range []string{filepath.Join(root, cg), filepath.Join(root, "systemd", cg), filepath.Join(root, "unified", cg)} {
		if st, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil && st.Mode().IsRegular() {
			return p.cgroupGroups(dir, tag)
		}
	}
	return nil, nil
}

// systemctlShow runs `systemctl show UNIT` and returns its properties.
func systemctlShow(ctx context.Context, unit string) (map[string]string, error) {
	path, err := exec.LookPath("systemctl")
	if err != nil {
		return nil, fmt.Errorf("systemd_unit %q: systemctl not found in PATH: %w", unit, err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "show", unit)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, errors.Join(fmt.Errorf("systemd_unit %q: systemctl show failed: %w", unit, err), errorIf(msg))
	}
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			props[k] = v
		}
	}
	return props, sc.Err()
}

func errorIf(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}
