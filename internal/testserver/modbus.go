package testserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// Modbus is a running Modbus server: Debian's python3-pymodbus (scripts/ensure-pymodbus.sh)
// running testdata/modbus/server.py, whose table of register values the tests know. Unit 1
// and unit 2 answer on TCPAddr (Modbus/TCP) and RTUAddr (RTU framing over TCP); DeadAddr
// accepts connections and never answers, a device that hangs.
type Modbus struct {
	TCPAddr, RTUAddr, DeadAddr string
}

// StartModbus starts the server on free loopback ports and stops it when the test ends. It
// fails the test when the server does not come up within 30s.
func StartModbus(t testing.TB) *Modbus {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "modbus", "server.py")
	var last error
	for range 3 { // another process may take a free port before the server binds it
		ports, err := testutil.FreePorts("tcp", 3)
		require.NoError(t, err)
		m, err := startModbus(t, script, ports)
		if err == nil {
			return m
		}
		last = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	require.NoError(t, last, "testserver: the Modbus server did not start; run scripts/ensure-pymodbus.sh (make test-deps)")
	return nil
}

func startModbus(t testing.TB, script string, ports []int) (*Modbus, error) {
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{script}
	for _, p := range ports {
		args = append(args, strconv.Itoa(p))
	}
	// Debian's python, whose dist-packages hold Debian's pymodbus.
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", args...)
	cmd.SysProcAttr = childAttr()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting %s: %w", script, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() && sc.Text() == "ready" {
			ready <- nil
			return
		}
		ready <- errors.New("the server exited before it was ready")
	}()
	stop := func() { cancel(); _ = cmd.Wait() }
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = errors.New("the server was not ready within 30s")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	t.Cleanup(stop)
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	return &Modbus{TCPAddr: addr(ports[0]), RTUAddr: addr(ports[1]), DeadAddr: addr(ports[2])}, nil
}
