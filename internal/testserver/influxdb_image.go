package testserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

func ensureInfluxImage(ctx context.Context, cli *testcontainers.DockerClient) (ImageInfo, error) {
	start := time.Now()
	ref := InfluxImageRepo + ":" + InfluxImageTag
	info := ImageInfo{Ref: ref}

	root, err := moduleRoot()
	if err != nil {
		return info, err
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, influxDockerfileDir, "Dockerfile"))
	if err != nil {
		return info, err
	}
	if err := checkInfluxBinary(); err != nil {
		return info, err
	}
	info.ContentHash, err = contentHash(dockerfile)
	if err != nil {
		return info, err
	}

	var oldID string
	if res, err := cli.ImageInspect(ctx, ref); err == nil {
		oldID = res.ID
		if res.Config != nil && res.Config.Labels[ContentHashLabel] == info.ContentHash {
			info.Took = time.Since(start)
			return info, nil
		}
	}

	if err := buildInfluxImage(ctx, dockerfile, info.ContentHash); err != nil {
		return info, err
	}
	res, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return info, fmt.Errorf("inspect %s after build: %w", ref, err)
	}
	if got := res.Config.Labels[ContentHashLabel]; got != info.ContentHash {
		return info, fmt.Errorf("image %s has content hash %q after build, want %q", ref, got, info.ContentHash)
	}
	if oldID != "" && oldID != res.ID {
		// Best effort: drop the stale image unless a container still uses it.
		_, _ = cli.ImageRemove(ctx, oldID, client.ImageRemoveOptions{PruneChildren: true})
	}
	info.Built = true
	info.Took = time.Since(start)
	return info, nil
}

// buildInfluxImage builds the InfluxDB image from dockerfile and the host's files, labelled
// with its content hash.
func buildInfluxImage(ctx context.Context, dockerfile []byte, hash string) error {
	dir, err := os.MkdirTemp("", "morse-influxdb-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), dockerfile, 0o644); err != nil {
		return err
	}
	for _, f := range influxHostFiles {
		if err := copyFile(f.src, filepath.Join(dir, f.name)); err != nil {
			return err
		}
	}

	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return fmt.Errorf("docker provider: %w", err)
	}
	defer provider.Close()
	var buildLog bytes.Buffer
	_, err = provider.BuildImage(ctx, &testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{
			Context:        dir,
			Dockerfile:     "Dockerfile",
			Repo:           InfluxImageRepo,
			Tag:            InfluxImageTag,
			KeepImage:      true,
			BuildLogWriter: &buildLog,
			BuildOptionsModifier: func(o *client.ImageBuildOptions) {
				o.Labels = map[string]string{ContentHashLabel: hash}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("build %s:%s: %w\n%s", InfluxImageRepo, InfluxImageTag, err, buildLog.String())
	}
	return nil
}

// checkInfluxBinary makes sure /usr/bin/influxd needs nothing the image
// lacks: only libc, through the x86-64 loader.
func checkInfluxBinary() error {
	const influxd = "/usr/bin/influxd"
	f, err := elf.Open(influxd)
	if err != nil {
		return fmt.Errorf("%w (install Debian's influxdb package: scripts/ensure-docker.sh does)", err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", influxd, err)
	}
	if extra := slices.DeleteFunc(libs, func(l string) bool { return l == "libc.so.6" }); len(extra) > 0 {
		return fmt.Errorf("%s links %v besides libc.so.6; add them to %s/Dockerfile and influxHostFiles", influxd, extra, influxDockerfileDir)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("%s: read interpreter: %w", influxd, err)
		}
		if interp := strings.TrimRight(string(b), "\x00"); interp != "/lib64/ld-linux-x86-64.so.2" {
			return fmt.Errorf("%s uses loader %s; the image provides /lib64/ld-linux-x86-64.so.2", influxd, interp)
		}
	}
	return nil
}

func contentHash(dockerfile []byte) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "Dockerfile\x00%d\x00", len(dockerfile))
	h.Write(dockerfile)
	for _, f := range influxHostFiles {
		r, err := os.Open(f.src)
		if err != nil {
			return "", err
		}
		st, err := r.Stat()
		if err != nil {
			r.Close()
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, st.Size())
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", f.src, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src) // follows symlinks: libc.so.6 is one
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// moduleRoot finds the morse module root: up from the working directory
// (go test runs in the package directory), else from this source file.
func moduleRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
				bytes.Contains(b, []byte("module "+moduleName+"\n")) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("testserver: cannot find the " + moduleName + " module root (go.mod)")
}
