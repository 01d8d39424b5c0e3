package testserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

const (
	// IoTDBImageRepo and IoTDBImageTag name the image the harness builds.
	IoTDBImageRepo = "morse-test/iotdb"
	IoTDBImageTag  = "2.0.1-beta"

	iotdbDockerfileDir = "testdata/containers/iotdb"
	iotdbInitPkg       = "./internal/testserver/iotdbinit"
)

// iotdbSysLibs are the libraries the JDK's java and libjvm.so link (ldd), which the image
// puts in /lib/x86_64-linux-gnu; the loader goes to /lib64.
var iotdbSysLibs = []string{"libc.so.6", "libm.so.6", "libz.so.1", "libstdc++.so.6", "libgcc_s.so.1"}

// jdkSkip are the parts of a JDK that a server never reads: they would only make the
// build context larger.
var jdkSkip = map[string]bool{"jmods": true, "include": true, "legal": true, "man": true, "docs": true,
	"demo": true, "lib/src.zip": true, "lib/ct.sym": true}

var iotdbImg struct {
	once sync.Once
	ref  string
	err  error
}

// iotdbImage builds the IoTDB image once per process, unless an image with the hash of
// the same inputs exists, and returns its reference.
func iotdbImage(ctx context.Context, cli *testcontainers.DockerClient) (string, error) {
	iotdbImg.once.Do(func() { iotdbImg.ref, iotdbImg.err = ensureIoTDBImage(ctx, cli) })
	return iotdbImg.ref, iotdbImg.err
}

// iotdbInputs are the files an image is built from: the JDK's home, the jars' directory and
// the module root.
type iotdbInputs struct{ root, jdk, jars string }

func findIoTDBInputs() (iotdbInputs, error) {
	var in iotdbInputs
	var err error
	if in.root, err = moduleRoot(); err != nil {
		return in, err
	}
	if in.jars, err = iotdbJars(in.root); err != nil {
		return in, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return in, fmt.Errorf("no java on PATH (scripts/ensure-iotdb.sh installs one): %w", err)
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		return in, err
	}
	in.jdk = filepath.Dir(filepath.Dir(java))
	return in, nil
}

// iotdbJars returns the jars' directory, running scripts/ensure-iotdb.sh when `make
// test-deps` has not (it is quick when they are there).
func iotdbJars(root string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(root, "scripts/ensure-iotdb.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/ensure-iotdb.sh: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// ensureIoTDBImage builds the image unless one labelled with the inputs' hash exists.
func ensureIoTDBImage(ctx context.Context, cli *testcontainers.DockerClient) (string, error) {
	ref := IoTDBImageRepo + ":" + IoTDBImageTag
	in, err := findIoTDBInputs()
	if err != nil {
		return ref, err
	}
	hash, err := in.hash()
	if err != nil {
		return ref, err
	}
	if res, err := cli.ImageInspect(ctx, ref); err == nil && res.Config != nil && res.Config.Labels[ContentHashLabel] == hash {
		return ref, nil
	}
	dir, err := os.MkdirTemp("", "morse-iotdb-build-")
	if err != nil {
		return ref, err
	}
	defer os.RemoveAll(dir)
	if err := in.assemble(dir); err != nil {
		return ref, err
	}
	return ref, buildIoTDBImage(ctx, dir, hash)
}

// hash is the sha256 of what the image is made of: the files beside the Dockerfile and the
// init's source by content, the JDK and the jars by path, size and modification time (they
// are hundreds of megabytes, and a package upgrade changes all three).
func (in iotdbInputs) hash() (string, error) {
	h := sha256.New()
	for _, dir := range []string{filepath.Join(in.root, iotdbDockerfileDir), filepath.Join(in.root, iotdbInitPkg)} {
		err := walkFiles(dir, nil, func(rel, path string, info fs.FileInfo) error {
			b, err := os.ReadFile(path)
			fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
			h.Write(b)
			return err
		})
		if err != nil {
			return "", err
		}
	}
	for _, dir := range []string{in.jdk, in.jars} {
		err := walkFiles(dir, jdkSkip, func(rel, _ string, info fs.FileInfo) error {
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", rel, info.Size(), info.ModTime().UnixNano())
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// walkFiles calls fn for every regular file under dir (symbolic links followed, as the copy
// follows them), by its path relative to dir, skipping the relative paths in skip and links
// that lead nowhere.
func walkFiles(dir string, skip map[string]bool, fn func(rel, path string, info fs.FileInfo) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := os.Stat(path) // follows links
		if err != nil || info.IsDir() {
			if info != nil && info.IsDir() && d.Type()&fs.ModeSymlink != 0 {
				return walkFiles(path, nil, func(r, p string, i fs.FileInfo) error { return fn(filepath.Join(rel, r), p, i) })
			}
			return nil // a dangling link: the JDK has some to packages not installed
		}
		return fn(rel, path, info)
	})
}

// assemble lays out the build context in dir, as the Dockerfile says.
func (in iotdbInputs) assemble(dir string) error {
	src := filepath.Join(in.root, iotdbDockerfileDir)
	for _, f := range []struct{ from, to string }{
		{filepath.Join(src, "Dockerfile"), "Dockerfile"},
		{filepath.Join(src, "iotdb-system.properties"), "conf/iotdb-system.properties"},
		{filepath.Join(src, "logback.xml"), "conf/logback.xml"},
		{"/lib64/ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2"},
	} {
		if err := linkOrCopy(f.from, filepath.Join(dir, f.to)); err != nil {
			return err
		}
	}
	for _, lib := range iotdbSysLibs {
		if err := linkOrCopy(filepath.Join("/lib/x86_64-linux-gnu", lib), filepath.Join(dir, "sys", lib)); err != nil {
			return err
		}
	}
	for _, tree := range []struct {
		from, to string
		skip     map[string]bool
	}{{in.jdk, "jdk", jdkSkip}, {in.jars, "lib", nil}} {
		err := walkFiles(tree.from, tree.skip, func(rel, path string, _ fs.FileInfo) error {
			if strings.HasPrefix(filepath.Base(rel), ".") {
				return nil // .complete, .lock
			}
			return linkOrCopy(path, filepath.Join(dir, tree.to, rel))
		})
		if err != nil {
			return err
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "init"), iotdbInitPkg)
	build.Dir = in.root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", iotdbInitPkg, err, out)
	}
	return nil
}

// linkOrCopy puts src (its target, when it is a link) at dst: a hard link when both are on
// one file system, a copy otherwise.
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if os.Link(real, dst) == nil {
		return nil
	}
	return copyFile(real, dst)
}

// buildIoTDBImage builds the image from the context in dir, labelled with hash.
func buildIoTDBImage(ctx context.Context, dir, hash string) error {
	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return fmt.Errorf("docker provider: %w", err)
	}
	defer provider.Close()
	var buildLog bytes.Buffer
	_, err = provider.BuildImage(ctx, &testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{
			Context: dir, Dockerfile: "Dockerfile", Repo: IoTDBImageRepo, Tag: IoTDBImageTag,
			KeepImage: true, BuildLogWriter: &buildLog,
			BuildOptionsModifier: func(o *client.ImageBuildOptions) {
				o.Labels = map[string]string{ContentHashLabel: hash}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("build %s:%s: %w\n%s", IoTDBImageRepo, IoTDBImageTag, err, buildLog.String())
	}
	return nil
}
