package kernel

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

const statFull = `cpu  6796 252 5655 10444977 175 0 101 0 0 0
cpu0 6796 252 5655 10444977 175 0 101 0 0 0
intr 1472736 57 10 0 0 0 0 0 0 0 0 0 0 156 0
ctxt 2626618
btime 1469620224
processes 3030
procs_running 1
procs_blocked 0
softirq 1031662 0 649485 20946 111071 11620 0 1 0 994 237545
page 5741 1808
swap 1 0
`

const pressureMemory = `some avg10=1.25 avg60=0.50 avg300=0.00 total=1429641
full avg10=0.00 avg60=0.00 avg300=0.00 total=54982
`

// fixture writes a /proc and /sys layout and returns its paths.
func fixture(t *testing.T, stat string) Paths {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	write("stat", stat)
	write("entropy_avail", "3938\n")
	for i, name := range ksmStats {
		write(filepath.Join("ksm", name), strings.Repeat("1", i%3+1)+"\n")
	}
	write("pressure/cpu", "some avg10=0.11 avg60=0.22 avg300=0.33 total=444\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	write("pressure/memory", pressureMemory)
	write("pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=68568296\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=54982338\n")
	return Paths{Stat: filepath.Join(dir, "stat"), Entropy: filepath.Join(dir, "entropy_avail"),
		KSMDir: filepath.Join(dir, "ksm"), Pressure: filepath.Join(dir, "pressure")}
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("kernel")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.kernel]]\n"))
	k, ok := info.New().(*Kernel)
	require.True(t, ok)
	require.Empty(t, k.Collect)
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	require.Contains(t, body, "collect = []")
	md, err := toml.Decode(body, New())
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
}

func TestUnknownGroupWarnsOnce(t *testing.T) {
	require.NoError(t, (&Kernel{Collect: []string{"ksm", "psi"}}).Validate())
	var logs testutil.Logs
	k := &Kernel{Collect: []string{"pis"}, Paths: fixture(t, statFull)}
	k.SetLogger(logs.Logger())
	require.NoError(t, k.Validate(), "Telegraf ignores an unknown group, so a config with one starts")
	require.NoError(t, k.Init())
	require.Equal(t, []string{`collect: unknown group has no effect; choose from "ksm" and "psi" group=pis`}, logs.Warnings())
	acc := &testutil.Accumulator{}
	require.NoError(t, k.Gather(context.Background(), acc))
	require.NoError(t, k.Gather(context.Background(), acc))
	require.Len(t, logs.Warnings(), 1, "once, at start")
	require.Equal(t, []string{"kernel", "kernel"}, []string{acc.Metrics()[0].Name(), acc.Metrics()[1].Name()},
		"nothing else changes")
}

func TestDefaultFields(t *testing.T) {
	k := &Kernel{Paths: fixture(t, statFull)}
	require.NoError(t, k.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, k.Gather(context.Background(), acc))
	ms := acc.Metrics()
	require.Len(t, ms, 1)
	require.Equal(t, "kernel", ms[0].Name())
	require.Empty(t, ms[0].Tags())
	require.Equal(t, map[string]any{
		"boot_time": int64(1469620224), "context_switches": int64(2626618), "disk_pages_in": int64(5741),
		"disk_pages_out": int64(1808), "entropy_avail": int64(3938), "interrupts": int64(1472736),
		"processes_forked": int64(3030),
	}, testutil.FieldsOf(ms[0]))
}

func TestKSMAndPressure(t *testing.T) {
	paths := fixture(t, statFull)
	require.NoError(t, os.WriteFile(filepath.Join(paths.KSMDir, "general_profit"), []byte("-42\n"), 0o644))
	k := &Kernel{Collect: []string{"ksm", "psi"}, Paths: paths}
	require.NoError(t, k.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, k.Gather(context.Background(), acc))

	kernel := testutil.FieldsOf(acc.MetricsNamed("kernel")[0])
	require.Len(t, kernel, 7+len(ksmStats)+1)
	require.Equal(t, int64(1), kernel["ksm_full_scans"])
	require.Equal(t, int64(111), kernel["ksm_stable_node_chains_prune_millisecs"])
	require.Equal(t, int64(-42), kernel["ksm_general_profit"])

	var got []string
	for _, m := range acc.MetricsNamed("pressure") {
		r, _ := m.Tag("resource")
		typ, _ := m.Tag("type")
		got = append(got, r+"/"+typ)
	}
	require.Equal(t, []string{"cpu/some", "memory/some", "memory/full", "io/some", "io/full"}, got,
		"cpu/full is always zero and left out, as in Telegraf")
	require.Equal(t, map[string]any{"avg10": 1.25, "avg60": 0.5, "avg300": 0.0, "total": uint64(1429641)},
		testutil.FieldsOf(acc.MetricsNamed("pressure")[1]), "averages and total in one metric")
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(p Paths)
		collect []string
		initErr string
		err     string
	}{
		{name: "stat missing", damage: func(p Paths) { os.Remove(p.Stat) }, err: "reading"},
		{name: "stat malformed", damage: func(p Paths) { os.WriteFile(p.Stat, []byte("ctxt abc\n"), 0o644) }, err: `parsing "ctxt"`},
		{name: "entropy malformed", damage: func(p Paths) { os.WriteFile(p.Entropy, []byte("x"), 0o644) }, err: "parsing"},
		{name: "ksm file missing", collect: []string{"ksm"}, damage: func(p Paths) { os.Remove(filepath.Join(p.KSMDir, "run")) }, err: "run"},
		{name: "no ksm in the kernel", collect: []string{"ksm"}, damage: func(p Paths) { os.RemoveAll(p.KSMDir) }, initErr: "KSM is not enabled"},
		{name: "no psi in the kernel", collect: []string{"psi"}, damage: func(p Paths) { os.RemoveAll(p.Pressure) }, initErr: "pressure stall information"},
		{name: "pressure malformed", collect: []string{"psi"}, damage: func(p Paths) {
			os.WriteFile(filepath.Join(p.Pressure, "io"), []byte("some avg10=x\n"), 0o644)
		}, err: "failed to read io pressure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths := fixture(t, statFull)
			tt.damage(paths)
			k := &Kernel{Collect: tt.collect, Paths: paths}
			if tt.initErr != "" {
				require.ErrorContains(t, k.Init(), tt.initErr)
				return
			}
			require.NoError(t, k.Init())
			require.ErrorContains(t, k.Gather(context.Background(), &testutil.Accumulator{}), tt.err)
		})
	}
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/kernel.golden"
	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	require.Len(t, ms, 6, "kernel plus five pressure series")
	shapes := testutil.LoadGolden(t, path)
	require.Equal(t, []string{"kernel: field disk_pages_in: emitted but marked absent-here"},
		shapes.Check(append([]morse.Metric{ms[0].WithField("disk_pages_in", morse.Int(1))}, ms[1:]...)))

	f := testutil.FieldsOf(ms[0])
	require.Greater(t, f["boot_time"], int64(1e9))
	require.Positive(t, f["context_switches"])
}
