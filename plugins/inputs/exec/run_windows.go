//go:build windows

package exec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"time"
)

// run runs one command line with the timeout. Windows has no process groups to signal, so
// a timeout kills the command itself.
func (e *Exec) run(ctx context.Context, words Command) (stdout, stderr []byte, err error) {
	if len(words) == 0 {
		return nil, nil, fmt.Errorf("command cannot be empty")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(e.Timeout))
	defer cancel()
	cmd := osexec.CommandContext(ctx, words[0], words[1:]...)
	if len(e.Environment) > 0 {
		cmd.Env = append(os.Environ(), e.Environment...)
	}
	cmd.WaitDelay = e.grace()
	var out bytes.Buffer
	errOut := limitedBuffer{max: maxLoggedStderr}
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		err = ErrTimeout
	}
	// Line protocol ends lines with \n; Windows programs often write \r\n.
	return bytes.ReplaceAll(out.Bytes(), []byte("\r\n"), []byte("\n")), errOut.Bytes(), err
}
