package testserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

const (
	// BoxImageRepo names the image of StartBox's containers; its tag is the hash of what
	// it is built from.
	BoxImageRepo = "morse-test/idlebox"

	boxDockerfileDir = "testdata/containers/idlebox"
	boxPkg           = "./internal/testserver/idlebox"
)

// BoxSpec describes one container of StartBox.
type BoxSpec struct {
	// Name is the container's name; it must be unique on the daemon.
	Name string
	// Labels and Env are the container's labels and environment ("KEY=value").
	Labels map[string]string
	Env    []string
	// Health, when not empty, gives the container Docker's health check, which passes
	// when Health is "ok" and fails otherwise, every 100ms; StartBox waits until Docker
	// reports the result ("healthy" or "unhealthy").
	Health string
	// Exit, when not nil, makes the process exit at once with that status; StartBox
	// waits until it has.
	Exit *int
	// Paused pauses the container once it runs.
	Paused bool
	// Spin makes the process use a little CPU.
	Spin bool
	// Create only creates the container: it stays in state "created".
	Create bool
	// Volume gives the container an anonymous volume at /data, removed with it.
	Volume bool
}

// StartBox starts a container of the idlebox image (a static Go program, the whole of an
// image built FROM scratch on first use, never pulled) as spec says, and returns its ID.
// The container is removed when the test ends.
func StartBox(t testing.TB, spec BoxSpec) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := dockerClient(t)
	ref, err := boxImage(ctx, cli)
	require.NoError(t, err, "testserver: the idlebox image")
	cfg := &container.Config{Image: ref, Labels: spec.Labels, Env: spec.Env}
	if spec.Spin {
		cfg.Env = append(cfg.Env, "IDLEBOX_SPIN=1")
	}
	if spec.Exit != nil {
		cfg.Cmd = []string{"exit", strconv.Itoa(*spec.Exit)}
	}
	if spec.Volume {
		cfg.Volumes = map[string]struct{}{"/data": {}}
	}
	if spec.Health != "" {
		cfg.Env = append(cfg.Env, "IDLEBOX_HEALTH="+spec.Health)
		cfg.Healthcheck = &container.HealthConfig{Test: []string{"CMD", "/idlebox", "health"},
			Interval: 100 * time.Millisecond, Timeout: 5 * time.Second, Retries: 1}
	}
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, Name: spec.Name,
		HostConfig: &container.HostConfig{}})
	require.NoError(t, err, "testserver: docker create %s", spec.Name)
	id := created.ID
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer rcancel()
		_, err := cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		require.NoError(t, err, "testserver: docker rm -f %s", spec.Name)
	})
	if spec.Create {
		return id
	}
	_, err = cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	require.NoError(t, err, "testserver: docker start %s", spec.Name)
	switch {
	case spec.Exit != nil:
		res := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case err := <-res.Error:
			require.NoError(t, err, "testserver: docker wait %s", spec.Name)
		case <-res.Result:
		}
	case spec.Health != "":
		want := "healthy"
		if spec.Health != "ok" {
			want = "unhealthy"
		}
		require.Eventually(t, func() bool {
			in, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			return err == nil && in.Container.State.Health != nil && string(in.Container.State.Health.Status) == want
		}, time.Minute, 20*time.Millisecond, "testserver: %s becomes %s", spec.Name, want)
	}
	if spec.Paused {
		_, err = cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		require.NoError(t, err, "testserver: docker pause %s", spec.Name)
	}
	return id
}

var boxImg struct {
	once sync.Once
	ref  string
	err  error
}

// boxImage builds the idlebox image once per process, unless one tagged with the hash of
// its sources exists, and returns its reference.
func boxImage(ctx context.Context, cli *testcontainers.DockerClient) (string, error) {
	boxImg.once.Do(func() { boxImg.ref, boxImg.err = ensureBoxImage(ctx, cli) })
	return boxImg.ref, boxImg.err
}

func ensureBoxImage(ctx context.Context, cli *testcontainers.DockerClient) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	// The tag is the hash of the Dockerfile, the program's source and the Go release that
	// compiles it: an image with that tag is what a build would make.
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", runtime.Version())
	for _, f := range []string{filepath.Join(boxDockerfileDir, "Dockerfile"), filepath.Join(boxPkg, "main.go")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	tag := hex.EncodeToString(h.Sum(nil))[:16]
	ref := BoxImageRepo + ":" + tag
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	dir, err := os.MkdirTemp("", "morse-idlebox-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := linkOrCopy(filepath.Join(root, boxDockerfileDir, "Dockerfile"), filepath.Join(dir, "Dockerfile")); err != nil {
		return "", err
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, "idlebox"), boxPkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", boxPkg, err, out)
	}
	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return "", fmt.Errorf("docker provider: %w", err)
	}
	defer provider.Close()
	var buildLog bytes.Buffer
	_, err = provider.BuildImage(ctx, &testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{Context: dir, Dockerfile: "Dockerfile", Repo: BoxImageRepo,
			Tag: tag, KeepImage: true, BuildLogWriter: &buildLog},
	})
	if err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", ref, err, buildLog.String())
	}
	return ref, nil
}
