package loadgen

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestVerifyAgainstARealInfluxDB sends generated lines straight into a real InfluxDB 1.6.7
// and has Verify count them there: every line arrives, as a point of its own, and the count
// queries that Verify writes are ones InfluxDB answers. InfluxDB 1.x refuses unsigned
// integers, so the pool writes them as signed, as --no-uint does.
func TestVerifyAgainstARealInfluxDB(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE verify")
	pool, err := Generate(GenOptions{Seed: 7, Hosts: 50, Lines: 3000, NoUint: true})
	require.NoError(t, err)

	cfg := Config{Transport: TransportHTTP, Addr: in.Addr(), Path: "/write?db=verify", Connections: 2,
		LinesPerRequest: 500, Lines: 5000}
	require.NoError(t, cfg.Validate())
	rep, err := Run(context.Background(), cfg, pool)
	require.NoError(t, err)
	require.Equal(t, int64(5000), rep.Lines)
	require.Zero(t, rep.FailedLines, "InfluxDB took every line: %v", rep.HTTPStatus)

	res, err := Verify(context.Background(), VerifyConfig{URL: in.URL(), DB: "verify"},
		pool.Measurements(), rep.FirstTS, rep.LastTS, rep.Lines)
	require.NoError(t, err)
	res.WaitSec = 0 // wall-clock time of the queries
	require.Equal(t, VerifyResult{Sent: 5000, Arrived: 5000, Percent: 100, Settled: true}, res)
}
