package procstat

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// supervisorGroups finds the processes of Supervisor programs as Telegraf's
// supervisor_units does: `supervisorctl status` names each program's state and main PID,
// and the processes reported are that PID's children. A program that is not running gives
// a group without processes but with its status tags; a running one without children gives
// none. supervisorctl finds its config the way it does from a shell (its working directory,
// then /etc/supervisord.conf and /etc/supervisor/supervisord.conf).
func (p *Procstat) supervisorGroups(ctx context.Context) ([]group, error) {
	units := p.supervisorUnits()
	out, err := exec.CommandContext(ctx, "supervisorctl", "status", strings.Join(units, " ")).Output()
	// Exit status 3 means that some program is not running; its line still says why.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		return nil, fmt.Errorf("getting supervisor PIDs failed: %w", err)
	}
	status := parseSupervisorStatus(string(out))
	groups := make([]group, 0, len(units))
	for _, u := range units {
		st := status[u]
		pidText := st["pid"]
		if pidText == "" {
			groups = append(groups, group{tags: st})
			continue
		}
		pid, err := strconv.ParseInt(pidText, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("getting supervisor PIDs failed: converting PID %q failed: %w", pidText, err)
		}
		children, err := p.finder.children(ctx, int32(pid))
		if err != nil {
			return nil, fmt.Errorf("getting supervisor PIDs failed: getting children for %d failed: %w", pid, err)
		}
		if len(children) == 0 {
			continue
		}
		// Telegraf tags the children with the pattern option under both names; kept so
		// that series match.
		tags := map[string]string{"pattern": p.Pattern, "parent_pid": p.Pattern}
		for k, v := range st {
			if _, ok := tags[k]; !ok && k != "pid" {
				tags[k] = v
			}
		}
		groups = append(groups, group{pids: children, tags: tags})
	}
	return groups, nil
}

// parseSupervisorStatus reads `supervisorctl status` lines such as
// "web  RUNNING   pid 11083, uptime 0:00:02" or "idle  STOPPED   Not started" into the
// tags of each program: supervisor_unit, status, and pid and uptimes or error.
func parseSupervisorStatus(out string) map[string]map[string]string {
	programs := map[string]map[string]string{}
	for line := range strings.Lines(out) {
		kv := strings.Fields(line)
		if len(kv) < 2 {
			continue
		}
		st := map[string]string{"supervisor_unit": kv[0], "status": kv[1]}
		switch kv[1] {
		case "FATAL", "EXITED", "BACKOFF", "STOPPING":
			st["error"] = strings.Join(kv[2:], " ")
		case "RUNNING":
			if len(kv) >= 6 {
				st["pid"] = strings.ReplaceAll(kv[3], ",", "")
				st["uptimes"] = kv[5]
			}
		}
		programs[kv[0]] = st
	}
	return programs
}
