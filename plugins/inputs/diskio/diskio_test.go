package diskio

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// source replays samples, one per gather, and records the names it was asked for.
type source struct {
	samples []map[string]disk.IOCountersStat
	at      int
	asked   [][]string
}

func (s *source) read(_ context.Context, names ...string) (map[string]disk.IOCountersStat, error) {
	s.asked = append(s.asked, names)
	out := s.samples[s.at]
	s.at++
	return out, nil
}

func counters(name string, v uint64) disk.IOCountersStat {
	return disk.IOCountersStat{Name: name, ReadCount: v, MergedReadCount: v + 1, WriteCount: v + 2,
		MergedWriteCount: v + 3, ReadBytes: v + 4, WriteBytes: v + 5, ReadTime: v + 6, WriteTime: v + 7,
		IopsInProgress: v + 8, IoTime: v + 9, WeightedIO: v + 10, SerialNumber: " SN-" + name + "\n"}
}

// udevFixture lays out /dev, /run and /sys for two devices with the old-style udev database,
// which the plugin finds by name.
func udevFixture(t *testing.T) Paths {
	root := t.TempDir()
	p := Paths{Dev: filepath.Join(root, "dev"), Run: filepath.Join(root, "run"), Sys: filepath.Join(root, "sys")}
	write := func(path, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	write(filepath.Join(p.Dev, "sda"), "")
	write(filepath.Join(p.Dev, "dm-0"), "")
	write(filepath.Join(p.Dev, ".udev", "db", "block:sda"), "S:disk/by-id/ata-DISK1\nE:ID_FS_TYPE=ext4\nE:ID_FS_LABEL=root\n")
	write(filepath.Join(p.Dev, ".udev", "db", "block:dm-0"), "S:mapper/vg-lv\nE:DM_VG_NAME=vg\nE:DM_LV_NAME=lv\n")
	write(filepath.Join(p.Sys, "block", "sda", "wwid"), "naa.5000c500a1b2c3d4\n")
	return p
}

func gather(t *testing.T, d *DiskIO) []morse.Metric {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, d.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())
	return acc.Metrics()
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("diskio")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.diskio]]\n"))
	d, ok := info.New().(*DiskIO)
	require.True(t, ok)
	require.True(t, d.SkipSerialNumber, "Telegraf's default leaves serial numbers out")
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	md, err := toml.Decode(body, New())
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
}

func TestFieldsAndDerived(t *testing.T) {
	first := map[string]disk.IOCountersStat{"sda": counters("sda", 100)}
	second := counters("sda", 100)
	second.ReadCount, second.WriteCount = 110, 112 // 20 requests completed
	second.ReadTime, second.WriteTime = 126, 127   // 40 ms spent on them
	second.IoTime = 129                            // busy 20 ms
	wrapped := counters("sda", 0)
	src := &source{samples: []map[string]disk.IOCountersStat{first, {"sda": second}, {"sda": wrapped}}}
	clock := time.Unix(1000, 0)
	d := &DiskIO{IOCounters: src.read, SkipSerialNumber: true, Paths: udevFixture(t)}
	d.now = func() time.Time { clock = clock.Add(40 * time.Millisecond); return clock }

	ms := gather(t, d)
	require.Len(t, ms, 1)
	require.Equal(t, "diskio", ms[0].Name())
	require.Equal(t, map[string]any{"reads": uint64(100), "merged_reads": uint64(101), "writes": uint64(102),
		"merged_writes": uint64(103), "read_bytes": uint64(104), "write_bytes": uint64(105), "read_time": uint64(106),
		"write_time": uint64(107), "iops_in_progress": uint64(108), "io_time": uint64(109), "weighted_io_time": uint64(110),
	}, testutil.FieldsOf(ms[0]), "no derived fields on the first gather")

	f := testutil.FieldsOf(gather(t, d)[0])
	require.Equal(t, 2.0, f["io_await"], "40 ms over 20 requests")
	require.Equal(t, 1.0, f["io_svctm"], "20 ms busy over 20 requests")
	require.Equal(t, 50.0, f["io_util"], "busy 20 ms of a 40 ms interval")

	f = testutil.FieldsOf(gather(t, d)[0])
	require.NotContains(t, f, "io_util", "nothing is derived across a counter reset")
	require.Equal(t, uint64(0), f["reads"], "the counters themselves are reported raw")
}

func TestTags(t *testing.T) {
	sample := map[string]disk.IOCountersStat{"sda": counters("sda", 1), "dm-0": counters("dm-0", 2), "vdb": {Name: "vdb"}}
	tests := []struct {
		name   string
		config func(d *DiskIO)
		want   []map[string]string
	}{
		{name: "defaults", config: func(*DiskIO) {}, want: []map[string]string{
			{"name": "dm-0"}, {"name": "sda", "wwid": "naa.5000c500a1b2c3d4"}, {"name": "vdb"}}},
		{name: "serial numbers", config: func(d *DiskIO) { d.SkipSerialNumber = false }, want: []map[string]string{
			{"name": "dm-0", "serial": "SN-dm-0"}, {"name": "sda", "serial": "SN-sda", "wwid": "naa.5000c500a1b2c3d4"},
			{"name": "vdb", "serial": "unknown"}}},
		{name: "name templates and device tags", config: func(d *DiskIO) {
			d.NameTemplates = []string{"$ID_FS_LABEL", "${DM_VG_NAME}/$DM_LV_NAME"}
			d.DeviceTags = []string{"ID_FS_TYPE", "MISSING"}
		}, want: []map[string]string{
			{"name": "vg/lv"}, {"name": "root", "ID_FS_TYPE": "ext4", "wwid": "naa.5000c500a1b2c3d4"}, {"name": "vdb"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &source{samples: []map[string]disk.IOCountersStat{sample}}
			d := New()
			d.IOCounters, d.Paths = src.read, udevFixture(t)
			d.SetLogger(slog.New(slog.DiscardHandler))
			tt.config(d)
			var got []map[string]string
			for _, m := range gather(t, d) {
				got = append(got, testutil.TagsOf(m))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDevices(t *testing.T) {
	sample := map[string]disk.IOCountersStat{"sda": counters("sda", 1), "dm-0": counters("dm-0", 2), "vdb": {Name: "vdb"}}
	tests := []struct {
		devices   []string
		wantNames []string
		wantAsked []string
	}{
		{devices: []string{"vd*"}, wantNames: []string{"vdb"}},
		{devices: []string{"disk/by-id/ata-*", "mapper/*"}, wantNames: []string{"dm-0", "sda"}},
		{devices: []string{"sda", "vdb"}, wantNames: []string{"dm-0", "sda", "vdb"}, wantAsked: []string{"sda", "vdb"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.devices, ","), func(t *testing.T) {
			src := &source{samples: []map[string]disk.IOCountersStat{sample}}
			d := &DiskIO{Devices: tt.devices, IOCounters: src.read, SkipSerialNumber: true, Paths: udevFixture(t)}
			require.NoError(t, d.Validate())
			var got []string
			for _, m := range gather(t, d) {
				n, _ := m.Tag("name")
				got = append(got, n)
			}
			require.Equal(t, tt.wantNames, got)
			if tt.wantAsked != nil {
				for i, a := range src.asked[0] {
					src.asked[0][i] = filepath.Base(a)
				}
				require.Equal(t, tt.wantAsked, src.asked[0], "plain names narrow the kernel's list")
			}
		})
	}
	require.ErrorContains(t, (&DiskIO{Devices: []string{"sd["}}).Validate(), `devices: invalid pattern "sd["`)
}

func TestGatherFailure(t *testing.T) {
	d := New()
	d.IOCounters = func(context.Context, ...string) (map[string]disk.IOCountersStat, error) {
		return nil, errors.New("no diskstats")
	}
	require.ErrorContains(t, d.Gather(context.Background(), &testutil.Accumulator{}), "error getting disk io info: no diskstats")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/diskio.golden"
	first := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	shapes := testutil.LoadGolden(t, path)
	d := New()
	_, err := toml.Decode(shapes.Config, d)
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	gather(t, d)
	for _, m := range first {
		require.NotContains(t, testutil.FieldsOf(m), "io_util")
	}
	// The utilisation needs an interval of at least a millisecond; the test does not wait
	// for one but moves the previous gather back in time.
	d.lastTime = d.lastTime.Add(-time.Second)
	second := gather(t, d)
	require.Empty(t, shapes.Check(second))
	for _, m := range second {
		require.Contains(t, testutil.FieldsOf(m), "io_util")
	}
	require.Equal(t, []string{"diskio: field reads: type integer, golden says unsigned"},
		shapes.Check([]morse.Metric{second[0].WithField("reads", morse.Int(1))}))
}
