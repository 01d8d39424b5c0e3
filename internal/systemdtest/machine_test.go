//go:build systemd

package systemdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// imageRepo names the images built from the root filesystem; the tag is the tarball's
// cache key, so a changed recipe gets a new image.
const imageRepo = "morse-test/systemd-bookworm"

// commandTimeout bounds every docker command; dpkg -i with a service start is the slowest.
const commandTimeout = 2 * time.Minute

// docker runs the docker CLI and returns its combined output.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), err
}

// systemdImage builds, once per recipe, the image of testdata/containers/systemd/Dockerfile
// around the root filesystem scripts/systemd-rootfs.sh makes.
func systemdImage(ctx context.Context, repoRoot string) (string, error) {
	script := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "scripts/systemd-rootfs.sh"))
	script.Stderr = os.Stderr
	out, err := script.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/systemd-rootfs.sh: %w", err)
	}
	tarball := strings.TrimSpace(string(out))
	tag := imageRepo + ":" + filepath.Base(filepath.Dir(tarball))
	if _, err := docker(ctx, "image", "inspect", tag); err == nil {
		return tag, nil
	}
	dir, err := os.MkdirTemp("", "systemd-image")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	files := []struct{ src, dst string }{
		{filepath.Join(repoRoot, "testdata/containers/systemd/Dockerfile"), "Dockerfile"},
		{tarball, "rootfs.tar"},
	}
	for _, f := range files {
		if err := linkOrCopy(f.src, filepath.Join(dir, f.dst)); err != nil {
			return "", err
		}
	}
	if _, err := docker(ctx, "build", "-q", "-t", tag, dir); err != nil {
		return "", err
	}
	return tag, nil
}

// linkOrCopy puts src at dst, as a hard link where it can: the root filesystem is 100 MB.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// machine is a container running systemd as PID 1.
type machine struct {
	name string
}

// bootMachine starts systemd in a container and waits until it has booted. systemd gets a
// private cgroup namespace over a tmpfs of its own: the host's /sys/fs/cgroup is never
// mounted in, since systemd remounts it read-only and the mount would carry that to the
// host. --privileged would fail here (root lacks CAP_SYS_RESOURCE), hence the capabilities.
func bootMachine(t *testing.T, image string, extraArgs ...string) *machine {
	t.Helper()
	name := fmt.Sprintf("morse-systemdtest-%d-%d", os.Getpid(), time.Now().UnixNano())
	args := append([]string{"run", "-d", "-t", "--name", name,
		"--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
		"--cgroupns=private", "--tmpfs", "/sys/fs/cgroup", "--tmpfs", "/run", "--tmpfs", "/run/lock",
		"--stop-signal", "SIGRTMIN+3"}, extraArgs...)
	args = append(args, image, "/sbin/init")
	_, err := docker(context.Background(), args...)
	require.NoError(t, err)
	m := &machine{name: name}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := m.try("journalctl --no-pager -n 200")
			t.Logf("the machine's journal, last 200 lines:\n%s", out)
		}
		_, _ = docker(context.Background(), "rm", "-f", "-v", name)
	})
	// is-system-running --wait returns once the boot is over: "running", or "degraded" if a
	// unit failed, which says something about the image, not about morse. Until systemd has
	// opened its bus, systemctl fails at once, hence the retries.
	state := strings.TrimSpace(m.waitFor(t, "systemctl is-system-running --wait", 90*time.Second,
		"systemd to finish booting", func(string) bool { return true }))
	if state != "running" {
		failed, _ := m.try("systemctl --failed --no-pager")
		require.Equal(t, "running", state, "systemd did not boot cleanly:\n%s", failed)
	}
	return m
}

// try runs a shell script in the machine and returns its combined output.
func (m *machine) try(script string) (string, error) {
	return docker(context.Background(), "exec", m.name, "sh", "-c", script)
}

// sh runs a shell script in the machine, fails the test if it fails, and returns its output.
func (m *machine) sh(t *testing.T, script string) string {
	t.Helper()
	out, err := m.try(script)
	require.NoError(t, err, script)
	return out
}

// copyIn copies a file from the host into the machine.
func (m *machine) copyIn(t *testing.T, src, dst string) {
	t.Helper()
	_, err := docker(context.Background(), "cp", src, m.name+":"+dst)
	require.NoError(t, err)
}

// writeFile writes a file in the machine.
func (m *machine) writeFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.CreateTemp("", "systemdtest")
	require.NoError(t, err)
	defer os.Remove(f.Name())
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	m.copyIn(t, f.Name(), path)
	m.sh(t, "chmod 0644 "+path)
}

// prop reads one property of a unit, as `systemctl show` gives it.
func (m *machine) prop(t *testing.T, unit, name string) string {
	t.Helper()
	return strings.TrimSpace(m.sh(t, "systemctl show -p "+name+" --value "+unit))
}

// cursor marks the journal's end, so that later reads see only what follows.
func (m *machine) cursor(t *testing.T) string {
	t.Helper()
	out := m.sh(t, "journalctl --no-pager -q -n 0 --show-cursor")
	c, ok := strings.CutPrefix(strings.TrimSpace(out), "-- cursor: ")
	require.True(t, ok, "a cursor: %q", out)
	return c
}

// Syslog priorities, as journalctl -p counts them.
const (
	prioErr     = 3
	prioWarning = 4
	prioDebug   = 7
)

// journal returns morse's journal messages after the cursor whose priority is at most
// maxPriority. It filters the priorities itself: journalctl 252 given both --after-cursor
// and -p returns nothing when the cursor's own entry is not morse's.
func (m *machine) journal(t *testing.T, after string, maxPriority int) string {
	t.Helper()
	out, err := m.messages(after, maxPriority)
	require.NoError(t, err)
	return out
}

func (m *machine) messages(after string, maxPriority int) (string, error) {
	out, err := m.try(fmt.Sprintf("journalctl --no-pager -q -u morse --after-cursor='%s' -o json --output-fields=MESSAGE,PRIORITY", after))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e struct{ MESSAGE, PRIORITY string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return "", fmt.Errorf("journal entry %q: %w", line, err)
		}
		if p, err := strconv.Atoi(e.PRIORITY); err == nil && p <= maxPriority {
			b.WriteString(e.MESSAGE + "\n")
		}
	}
	return b.String(), nil
}

// waitJournal waits until morse's journal after the cursor, at most maxPriority, holds
// want, and returns it.
func (m *machine) waitJournal(t *testing.T, after, want string, within time.Duration, maxPriority int) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out, err := m.messages(after, maxPriority)
		if err == nil && strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			require.FailNowf(t, "timed out", "waited %v for morse's journal to say %q; it says (%v):\n%s", within, want, err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitFor runs script every quarter second until ok accepts its output, at most for within,
// and returns the output it accepted. A failing script is retried like a rejected output.
func (m *machine) waitFor(t *testing.T, script string, within time.Duration, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out, err := m.try(script)
		if err == nil && ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			if len(out) > 4000 {
				out = "..." + out[len(out)-4000:]
			}
			require.FailNowf(t, "timed out", "waited %v for %s; last output of %q:\n%s", within, what, script, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
