package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatrixCellsCoverTheIssuesMatrix(t *testing.T) {
	cells := matrixCells()
	require.Len(t, cells, 24, "(9 HTTP + 3 TCP) x flat and slowed")
	names := map[string]scenario{}
	for _, c := range cells {
		require.NotContains(t, names, c.Name)
		names[c.Name] = c
		require.Positive(t, c.Lines, "every cell is bounded")
		require.Equal(t, cellTimeout, c.Duration)
		require.Zero(t, c.Rate, "every cell is flat out")
	}
	require.Equal(t, scenario{Name: "http-c16-b5000", Transport: "http", Input: "influxdb_listener", Connections: 16,
		LinesPerRequest: 5000, Lines: matrixLines, Duration: cellTimeout, Group: "flat"}, names["http-c16-b5000"])
	require.Equal(t, scenario{Name: "tcp-c4-slow", Transport: "tcp", Input: "socket_listener", Connections: 4,
		LinesPerRequest: 1000, Lines: slowLines, Duration: cellTimeout, SinkRate: slowSinkRate, Group: "slow",
		ReadBufferSize: "64KiB", SendBuffer: 64 << 10}, names["tcp-c4-slow"], "small socket buffers, so that pushback reaches the sender within the cell")
	require.Empty(t, names["http-c4-b1000-slow"].ReadBufferSize)
	require.Equal(t, 16<<10, names["tcp-c16-slow"].SendBuffer, "16 connections share the budget")
	require.Equal(t, "16KiB", names["tcp-c16-slow"].ReadBufferSize)
	for _, c := range capacityCells {
		require.Contains(t, names, c)
	}
}

func TestFindCapacity(t *testing.T) {
	flat := result{Scenario: cell("tcp", 4, 1000, false), LinesSent: 300000, DeliveryPct: 100, DeliveredPerSec: 400000, CPUMicrosLine: 2}
	got := findCapacity([]result{flat}, "tcp-c4", func(scenario) result {
		t.Fatal("a lossless flat cell needs no paced run")
		return result{}
	})
	require.Equal(t, capacity{Cell: "tcp-c4", Lossless: true, RatePerSec: 400000, CPUMicrosLine: 2}, got)

	flat.DeliveryPct, flat.OutputDrops = 50, 150000
	var rates []float64
	got = findCapacity([]result{flat}, "tcp-c4", func(sc scenario) result {
		rates = append(rates, sc.Rate)
		require.Equal(t, "capacity", sc.Group)
		r := result{Scenario: sc, LinesSent: sc.Lines, DeliveryPct: 100, CPUMicrosLine: 2.5}
		if sc.Rate > 300000 {
			r.OutputDrops = 10
		}
		return r
	})
	require.Equal(t, []float64{320000, 256000}, rates)
	require.True(t, got.Lossless)
	require.Equal(t, 256000.0, got.RatePerSec)
	require.Equal(t, 2.5, got.CPUMicrosLine)
	require.Len(t, got.Runs, 2)

	got = findCapacity(nil, "tcp-c4", nil)
	require.False(t, got.Lossless)
}

func TestFindUDPLossless(t *testing.T) {
	flood := result{Scenario: scenario{Name: "udp-flood", Transport: "udp"}}
	probe := func(limit float64, rates *[]float64) func(sc scenario) result {
		return func(sc scenario) result {
			*rates = append(*rates, sc.Rate)
			r := result{Scenario: sc, LinesSent: 1000, DeliveryPct: 100}
			if sc.Rate > limit {
				r.UDPKernelDrops = 3
			}
			return r
		}
	}
	for _, tc := range []struct {
		limit float64
		rates []float64
		want  float64
	}{
		{350000, []float64{600000, 420000, 290000, 350000, 380000, 360000}, 350000},
		{800000, []float64{600000, 750000, 930000, 840000, 790000, 810000}, 790000},
		{5000, []float64{600000, 420000, 290000, 200000, 140000, 90000}, 0},
	} {
		var rates []float64
		probes, rate := findUDPLossless(flood, probe(tc.limit, &rates))
		require.Equal(t, tc.rates, rates, "limit %.0f", tc.limit)
		require.Len(t, probes, len(tc.rates))
		require.Equal(t, tc.want, rate, "limit %.0f", tc.limit)
	}
	probes, rate := findUDPLossless(result{Error: "boom"}, nil)
	require.Empty(t, probes)
	require.Zero(t, rate)
}

func TestWorstCellIsTheLeastDelivered(t *testing.T) {
	cells := []result{
		{Scenario: scenario{Name: "a"}, DeliveryPct: 100},
		{Scenario: scenario{Name: "b"}, DeliveryPct: 42.5, OutputDrops: 7},
		{Scenario: scenario{Name: "c"}, DeliveryPct: 42.5, OutputDrops: 9},
	}
	require.Equal(t, "c (42.50% delivered, 9 dropped by the output, 0 duplicates)", worstCell(cells))
	require.Equal(t, "f (100.00% delivered, 0 dropped by the output, 12 duplicates)", worstCell([]result{
		{Scenario: scenario{Name: "e"}, DeliveryPct: 100},
		{Scenario: scenario{Name: "f"}, DeliveryPct: 100, Duplicates: 12},
	}), "duplicates tell full deliveries apart")
	cells = append(cells, result{Scenario: scenario{Name: "d"}, Error: "agent did not start"})
	require.Equal(t, "d (failed: agent did not start)", worstCell(cells))
	require.Empty(t, worstCell(nil))
}

func TestEvaluateMatrix(t *testing.T) {
	rep := &matrixReport{
		Cells: []result{
			{Scenario: cell("http", 1, 100, false), DeliveryPct: 99.95, OutputDrops: 3},
			{Scenario: cell("tcp", 16, 1000, true), DeliveryPct: 100, SentPerSec: 12000},
		},
		Capacity: []capacity{{Cell: "http-c4-b1000", Lossless: true, CPUMicrosLine: 1.4}, {Cell: "tcp-c4"}},
		UDPFlood: &result{}, UDPLosslessRate: 650000,
		Bomb: &bombResult{GrowthMiB: 20},
	}
	require.Equal(t, []target{
		{Goal: "delivery % >= 99.9", Scenario: "http-c1-b100", Value: 99.95, Limit: 99.9, Met: true},
		{Goal: "no eviction, healthy sink", Scenario: "http-c1-b100", Value: 3, Limit: 0, Met: false},
		{Goal: "delivery % = 100, slowed sink", Scenario: "tcp-c16-slow", Value: 100, Limit: 100, Met: true},
		{Goal: "sender slowed: lines/s <= 2 x the sink's", Scenario: "tcp-c16-slow", Value: 12000, Limit: 10000, Met: false},
		{Goal: "CPU-µs per line at lossless capacity", Scenario: "http-c4-b1000", Value: 1.4, Limit: cpuHTTPLimit, Met: true},
		{Goal: "CPU-µs per line at lossless capacity", Scenario: "tcp-c4", Value: 0, Limit: cpuTCPLimit, Met: false},
		{Goal: "UDP 8-line lossless lines/s", Scenario: "udp-paced", Value: 650000, Limit: udpLosslessGoal, Met: true},
		{Goal: "gzip bomb RSS growth MiB", Scenario: "gzip-bomb", Value: 20, Limit: bombGrowthLimit, Met: false},
	}, evaluateMatrix(rep))
}

func TestOutputDropsSumsEveryOutput(t *testing.T) {
	require.Equal(t, int64(12), outputDrops(map[string]int64{
		"internal_write,output=influxdb metrics_dropped":                            10,
		"internal_write,output=file metrics_dropped":                                2,
		"internal_write_dropped,output=influxdb,reason=buffer_full metrics_dropped": 10,
		"internal_agent metrics_dropped":                                            12,
		"internal_write,output=influxdb metrics_written":                            5,
	}))
}

func TestGzipBombInflatesToItsSize(t *testing.T) {
	const mib = 4 // the benchmark's 400 take minutes under the race detector
	body, err := gzipBomb(mib)
	require.NoError(t, err)
	require.Less(t, len(body), (mib<<20)/100, "small on the wire")
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, zr)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(mib<<20))
	require.Less(t, n, int64(mib+1)<<20)
}
