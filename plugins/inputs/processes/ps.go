package processes

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
)

// runPS runs `ps axo state`, through sudo (doas on OpenBSD) when asked to.
func runPS(ctx context.Context, goos string, sudo bool) ([]byte, error) {
	args := []string{"ps", "axo", "state"}
	if sudo {
		wrapper := "sudo"
		if goos == "openbsd" {
			wrapper = "doas"
		}
		args = append([]string{wrapper}, args...)
	}
	bin, err := exec.LookPath(args[0])
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, bin, args[1:]...).Output()
	if err != nil {
		return nil, fmt.Errorf("running %v: %w", args, err)
	}
	return out, nil
}

// fromPS counts the states that ps prints, one per line after the STAT header.
func (p *Processes) fromPS(ctx context.Context, c counts) error {
	run := p.ps
	if run == nil {
		run = func(ctx context.Context, sudo bool) ([]byte, error) { return runPS(ctx, p.platform(), sudo) }
	}
	out, err := run(ctx, p.UseSudo)
	if err != nil {
		return err
	}
	for i, status := range bytes.Fields(out) {
		if i == 0 && string(status) == "STAT" {
			continue
		}
		switch status[0] {
		case 'W':
			c["wait"]++
		case 'U', 'D', 'L':
			// Uninterruptible sleep, disk sleep or locked.
			c["blocked"]++
		case 'Z':
			c["zombies"]++
		case 'X':
			c["dead"]++
		case 'T':
			c["stopped"]++
		case 'R':
			c["running"]++
		case 'S':
			c["sleeping"]++
		case 'I':
			c["idle"]++
		case '?':
			c["unknown"]++
		default:
			p.logger().Info("unknown state from ps", "state", string(status[0]))
		}
		c["total"]++
	}
	return nil
}
