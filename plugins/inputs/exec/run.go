//go:build unix

package exec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
	"time"
)

// run runs one command with the timeout. It returns stdout in full, stderr up to
// maxLoggedStderr, and ErrTimeout, the command's own error, or nil.
func (e *Exec) run(ctx context.Context, words Command) (stdout, stderr []byte, err error) {
	if len(words) == 0 {
		return nil, nil, fmt.Errorf("command cannot be empty")
	}
	cmd := osexec.Command(words[0], words[1:]...)
	if len(e.Environment) > 0 {
		cmd.Env = append(os.Environ(), e.Environment...)
	}
	var out bytes.Buffer
	errOut := limitedBuffer{max: maxLoggedStderr}
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Its own process group lets a timeout stop the command's children too: a shell script
	// killed alone would leave its pipeline running and holding stdout open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A background child that keeps stdout open must not hold the gather forever once
	// the command itself has exited.
	cmd.WaitDelay = e.grace()
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	err = e.wait(ctx, cmd)
	return out.Bytes(), errOut.Bytes(), err
}

// wait waits for cmd. On timeout, or when the gather is cancelled, it sends SIGTERM to the
// process group and SIGKILL after the grace period, as Telegraf does. A command that exits
// cleanly on SIGTERM still counts as timed out: its output may be incomplete.
func (e *Exec) wait(ctx context.Context, cmd *osexec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(time.Duration(e.Timeout))
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	case <-ctx.Done():
	}
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	kill := time.NewTimer(e.grace())
	defer kill.Stop()
	select {
	case <-done:
	case <-kill.C:
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-done
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
	return ErrTimeout
}
