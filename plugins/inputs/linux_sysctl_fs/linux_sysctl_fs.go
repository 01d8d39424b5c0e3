// Package linux_sysctl_fs is the inputs.linux_sysctl_fs plugin: the file system counters
// of /proc/sys/fs (asynchronous I/O requests, quota entries, superblocks, inodes, dentries
// and file handles) under Telegraf's field names, all unsigned as in Telegraf.
//
// The files are read under $HOST_PROC when it is set. A file this kernel does not have is
// left out, as in Telegraf; one that cannot be read or parsed fails the gather.
package linux_sysctl_fs //nolint:revive // the package is named as the plugin, as Telegraf's

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/hostfs"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Provides Linux sysctl fs metrics"

//go:embed sample.conf
var sampleConfig string

// SysctlFS is the inputs.linux_sysctl_fs plugin. It has no options.
type SysctlFS struct{}

var _ morse.Input = (*SysctlFS)(nil)

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "linux_sysctl_fs",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return &SysctlFS{} },
	})
}

// files names the fields of each file, in the file's column order; an empty name skips a
// column (file-nr's second, always 0 since Linux 2.6).
var files = []struct {
	file   string
	fields []string
}{
	{"aio-nr", []string{"aio-nr"}},
	{"aio-max-nr", []string{"aio-max-nr"}},
	{"dquot-nr", []string{"dquot-nr"}},
	{"dquot-max", []string{"dquot-max"}},
	{"super-nr", []string{"super-nr"}},
	{"super-max", []string{"super-max"}},
	{"inode-state", []string{"inode-nr", "inode-free-nr", "inode-preshrink-nr"}},
	{"dentry-state", []string{"dentry-nr", "dentry-unused-nr", "dentry-age-limit", "dentry-want-pages"}},
	{"file-nr", []string{"file-nr", "", "file-max"}},
}

// Gather reports one linux_sysctl_fs metric.
func (s *SysctlFS) Gather(_ context.Context, acc morse.Accumulator) error {
	dir := hostfs.Proc("sys", "fs")
	fields := make(map[string]any, 16)
	for _, f := range files {
		if err := readColumns(filepath.Join(dir, f.file), f.fields, fields); err != nil {
			return err
		}
	}
	if len(fields) > 0 {
		acc.AddFields("linux_sysctl_fs", fields, nil)
	}
	return nil
}

// readColumns parses the tab-separated columns of path into the named fields.
func readColumns(path string, names []string, fields map[string]any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	cols := bytes.Split(bytes.TrimRight(data, "\n"), []byte{'\t'})
	for i, name := range names {
		if i >= len(cols) {
			break
		}
		if name == "" {
			continue
		}
		v, err := strconv.ParseUint(string(cols[i]), 10, 64)
		if err != nil {
			return fmt.Errorf("parsing %s in %q: %w", name, path, err)
		}
		fields[name] = v
	}
	return nil
}
