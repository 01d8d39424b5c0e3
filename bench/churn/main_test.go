package churn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPlotDecodes(t *testing.T) {
	r := &report{}
	for i := range 600 {
		r.Samples = append(r.Samples, sample{WallS: float64(i), SimH: float64(i) * 24 / 600, RSSKiB: 50000 + int64(i%7)*100, Delivered: int64(i) * 1000})
	}
	b, err := r.plot()
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, plotW, img.Bounds().Dx())
}

func TestTenthMeanAndGrowth(t *testing.T) {
	var s []sample
	for i := range 100 {
		s = append(s, sample{RSSKiB: 1000 + int64(i/10)})
	}
	require.Equal(t, int64(1001), tenthMean(s, 1))
	require.Equal(t, int64(1009), tenthMean(s, 9))
	o := &options{duration: time.Minute, equivalent: time.Hour, work: workload{measurements: 1, fixed: 1, rotating: 1, newPerInterval: 1, interval: time.Second}}
	r := newReport(o, time.Second, s, &feeder{}, 0, nil)
	require.InDelta(t, 0.799, r.GrowthPct, 0.001)
	require.True(t, r.Pass)
}

func TestRoundAndDistinct(t *testing.T) {
	w := workload{measurements: 2, fixed: 2, rotating: 2, newPerInterval: 1, interval: 10 * time.Second}
	got := string(w.round(nil, 3, time.Unix(0, 1000)))
	require.Equal(t, strings.Join([]string{
		"m0,host=web-0,id=f0 value=3i 1000", "m0,host=web-1,id=f1 value=3i 1001",
		"m0,host=web-2,id=r3 value=3i 1002", "m0,host=web-3,id=r4 value=3i 1003",
		"m1,host=web-0,id=f0 value=3i 1000", "m1,host=web-1,id=f1 value=3i 1001",
		"m1,host=web-2,id=r3 value=3i 1002", "m1,host=web-3,id=r4 value=3i 1003", "",
	}, "\n"), got)
	require.Equal(t, int64(4), w.distinct(1))
	require.Equal(t, int64(6), w.distinct(3))
}

func TestReadGuardCountersSumsTheInstances(t *testing.T) {
	path := filepath.Join(t.TempDir(), "internal.out")
	require.NoError(t, os.WriteFile(path, []byte(
		"internal_cardinality,processor=cardinality trips=1i,keys_tracked=5i 1\n"+
			"internal_cardinality,processor=cardinality trips=0i,keys_tracked=0i 1\n"+
			"internal_cardinality,processor=cardinality trips=2i,keys_tracked=8i 2\n"+
			"internal_cardinality,processor=cardinality trips=0i,keys_tracked=1i 2\n"), 0o644))
	require.Equal(t, map[string]int64{"trips": 2, "keys_tracked": 9}, readGuardCounters(path))
}

func TestReportJSONRoundTrips(t *testing.T) {
	r := &report{GrowthPct: 0.5, Pass: true, Samples: []sample{{WallS: 1, RSSKiB: 2}}}
	out := filepath.Join(t.TempDir(), "x")
	require.NoError(t, r.write(out))
	var back report
	data, err := os.ReadFile(out + ".json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, r.Samples, back.Samples)
	require.FileExists(t, out+".png")
	require.FileExists(t, out+".md")
}

func TestReadHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "internal.out")
	var lines strings.Builder
	for i := range 20 {
		fmt.Fprintf(&lines, "internal_memstats heap_in_use_bytes=%di,heap_sys_bytes=%du,heap_released_bytes=1024u,sys_bytes=%du %d\n",
			(1000+i)*1024, (2000+i)*1024, (3000+i)*1024, (10+i)*int(time.Second))
		lines.WriteString("internal_agent metrics_gathered=1i 1\n")
	}
	require.NoError(t, os.WriteFile(path, []byte(lines.String()), 0o644))
	h := readHeap(path)
	require.Len(t, h, 20)
	require.Equal(t, heapSample{WallS: 19, HeapInUseKiB: 1019, HeapMappedKiB: 2018, RuntimeKiB: 3018}, h[19])
	var r report
	r.setHeap(h)
	require.Equal(t, int64(1002), r.HeapSecondKiB)
	require.Equal(t, int64(1018), r.HeapLastKiB)
}

func TestReadRSSOfThisProcess(t *testing.T) {
	s, err := readRSS(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, s.AnonKiB)
	require.Positive(t, s.FileKiB)
	require.InDelta(t, s.RSSKiB, s.AnonKiB+s.FileKiB, float64(s.RSSKiB)/10) // RssShmem is the rest
}
