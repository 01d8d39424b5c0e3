package docker

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// BenchmarkGather gathers 20 running containers of the real dockerd with the plugin's
// defaults, after a first gather that took the two-sample stats of each: ns and
// allocations per gather (docs/bench/docker.md sets them beside Telegraf's).
func BenchmarkGather(b *testing.B) {
	prefix := fmt.Sprintf("morse-docker-bench-%d-", os.Getpid())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { testserver.StartBox(b, testserver.BoxSpec{Name: fmt.Sprintf("%s%02d", prefix, i)}) })
	}
	wg.Wait()
	f := fleet{prefix: prefix}
	d := f.newDocker(b, "")
	acc := gather(b, d)
	require.Len(b, acc.MetricsNamed("docker_container_status"), 20)
	metrics := acc.NMetrics()
	ctx := testutil.Context(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		acc.Clear()
		if err := d.Gather(ctx, acc); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.Equal(b, metrics, acc.NMetrics())
	b.ReportMetric(float64(metrics), "metrics/gather")
}
