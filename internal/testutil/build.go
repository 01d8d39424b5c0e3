package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// morsePkg is the agent's main package, named by import path so that a test in any package
// of the module can build it.
const morsePkg = "github.com/morse-agent/morse/cmd/morse"

// BuildMorse builds the agent's binary to path, statically (CGO_ENABLED=0) as `make build`
// does, passing flags to go build (such as "-tags", "wedgetest" or "-ldflags",
// "-X main.version=v"). The error carries go build's output. It is the one build of the
// binary in the tests: the end-to-end tests of cmd/morse, the package's tests and the
// plugins' tests that kill a real agent.
func BuildMorse(ctx context.Context, path string, flags ...string) error {
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", path, morsePkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
