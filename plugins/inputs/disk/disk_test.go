package disk

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

var mounts = []disk.PartitionStat{
	{Device: "/dev/sda1", Mountpoint: "/", Fstype: "ext4", Opts: []string{"rw", "relatime"}},
	{Device: "/dev/sda2", Mountpoint: "/home", Fstype: "ext4", Opts: []string{"ro", "noatime"}},
	{Device: "/dev/sda1", Mountpoint: "/srv/www", Fstype: "ext4", Opts: []string{"rw", "bind"}},
	{Device: "tmpfs", Mountpoint: "/run", Fstype: "tmpfs", Opts: []string{"rw"}},
	{Device: "none", Mountpoint: "/dev/shm", Fstype: "tmpfs", Opts: []string{"ro"}},
	{Device: "proc", Mountpoint: "/proc", Fstype: "proc", Opts: []string{"rw"}},
	{Device: "systemd-1", Mountpoint: "/net", Fstype: "autofs", Opts: []string{"rw"}},
	{Device: "server:/export", Mountpoint: "/mnt/stale", Fstype: "nfs4", Opts: []string{}},
}

// usage gives each mount point its own numbers; /proc has no blocks and /mnt/stale hangs.
func usage(_ context.Context, path string) (*disk.UsageStat, error) {
	switch path {
	case "/proc":
		return &disk.UsageStat{Path: path}, nil
	case "/mnt/stale":
		return nil, errors.New("stale file handle")
	case "/net":
		panic("autofs must never be asked for usage: that would trigger the mount")
	}
	return &disk.UsageStat{Path: path, Total: 1100, Free: 400, Used: 600, InodesTotal: 100, InodesFree: 75, InodesUsed: 25}, nil
}

func fake(prefix string) Source {
	return Source{
		Partitions: func(context.Context, bool) ([]disk.PartitionStat, error) { return mounts, nil },
		Usage:      usage,
		Getenv: func(key string) string {
			if key == "HOST_MOUNT_PREFIX" {
				return prefix
			}
			return ""
		},
		Label: func(_ context.Context, device string) (string, error) {
			if device == "sda1" {
				return "rootfs", nil
			}
			return "", errors.New("no udev data")
		},
	}
}

func paths(ms []morse.Metric) []string {
	var out []string
	for _, m := range ms {
		p, _ := m.Tag("path")
		out = append(out, p)
	}
	return out
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("disk")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.disk]]\n"))
	d, ok := info.New().(*Disk)
	require.True(t, ok)
	require.Empty(t, d.IgnoreFS, "Telegraf's default; its sample config sets a list")
	require.Empty(t, d.MountPoints)
	require.Empty(t, d.IgnoreMountOpts)

	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := &Disk{}
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.Equal(t, []string{"tmpfs", "devtmpfs", "devfs", "iso9660", "overlay", "aufs", "squashfs"}, fresh.IgnoreFS,
		"the sample sets Telegraf's list")
}

func TestFilters(t *testing.T) {
	tests := []struct {
		name   string
		config func(d *Disk)
		want   []string
	}{
		{name: "defaults: no ignore_fs, autofs still skipped", config: func(*Disk) {}, want: []string{"/", "/home", "/srv/www", "/run", "/dev/shm"}},
		{name: "the sample's ignore_fs", config: func(d *Disk) {
			d.IgnoreFS = []string{"tmpfs", "devtmpfs", "devfs", "iso9660", "overlay", "aufs", "squashfs"}
		}, want: []string{"/", "/home", "/srv/www"}},
		{name: "mount_points", config: func(d *Disk) { d.MountPoints = []string{"/home", "/nowhere"} }, want: []string{"/home"}},
		{name: "ignore_mount_opts bind", config: func(d *Disk) { d.IgnoreMountOpts = []string{"bind"} }, want: []string{"/", "/home", "/run", "/dev/shm"}},
		{name: "ignore_fs", config: func(d *Disk) { d.IgnoreFS = []string{"ext4"} }, want: []string{"/run", "/dev/shm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New()
			d.Source = fake("")
			d.TraceFilters = true
			d.SetLogger(slog.New(slog.DiscardHandler))
			tt.config(d)
			acc := &testutil.Accumulator{}
			require.NoError(t, d.Gather(context.Background(), acc))
			require.Equal(t, tt.want, paths(acc.Metrics()))
			require.Empty(t, acc.Errors(), "an unreadable mount point is skipped, not an error")
		})
	}
}

func TestTagsAndFields(t *testing.T) {
	d := New()
	d.Source = fake("")
	acc := &testutil.Accumulator{}
	require.NoError(t, d.Gather(context.Background(), acc))
	ms := acc.Metrics()
	require.Equal(t, map[string]string{"device": "sda1", "fstype": "ext4", "mode": "rw", "path": "/", "label": "rootfs"}, testutil.TagsOf(ms[0]))
	require.Equal(t, map[string]string{"device": "sda2", "fstype": "ext4", "mode": "ro", "path": "/home"}, testutil.TagsOf(ms[1]))
	require.Equal(t, map[string]string{"device": "tmpfs", "fstype": "tmpfs", "mode": "ro", "path": "/dev/shm"}, testutil.TagsOf(ms[4]),
		"a mount without a device is named by its file system type")
	require.Equal(t, map[string]any{
		"total": uint64(1100), "free": uint64(400), "used": uint64(600), "used_percent": 60.0,
		"inodes_total": uint64(100), "inodes_free": uint64(75), "inodes_used": uint64(25), "inodes_used_percent": 25.0,
	}, testutil.FieldsOf(ms[0]), "used_percent is used/(used+free), not used/total")
	require.Equal(t, "unknown", mode(nil))
}

func TestHostMountPrefix(t *testing.T) {
	var asked []string
	d := New()
	d.Source = fake("/hostfs")
	d.Source.Usage = func(ctx context.Context, path string) (*disk.UsageStat, error) {
		asked = append(asked, path)
		return usage(ctx, strings.TrimPrefix(path, "/hostfs"))
	}
	acc := &testutil.Accumulator{}
	require.NoError(t, d.Gather(context.Background(), acc))
	require.Contains(t, asked, "/hostfs/home", "usage is read below the prefix")
	require.Equal(t, []string{"/", "/home", "/srv/www", "/run", "/dev/shm"}, paths(acc.Metrics()), "the path tag is the host's")
}

func TestPartitionsFailure(t *testing.T) {
	d := New()
	d.Source.Partitions = func(context.Context, bool) ([]disk.PartitionStat, error) { return nil, errors.New("no mounts") }
	require.ErrorContains(t, d.Gather(context.Background(), &testutil.Accumulator{}), "error getting disk usage info: no mounts")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/disk.golden"
	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	shapes := testutil.LoadGolden(t, path)
	require.Equal(t, []string{"disk: tag uuid: emitted but not in the golden list"},
		shapes.Check([]morse.Metric{ms[0].WithTag("uuid", "x")}))
	require.True(t, slices.Contains(paths(ms), "/"), "the root file system is reported")
	for _, m := range ms {
		fstype, _ := m.Tag("fstype")
		require.NotEqual(t, "tmpfs", fstype, "the golden config ignores tmpfs")
		f := testutil.FieldsOf(m)
		require.Positive(t, f["total"])
		require.InDelta(t, 50.0, f["used_percent"], 50.0)
	}
}
