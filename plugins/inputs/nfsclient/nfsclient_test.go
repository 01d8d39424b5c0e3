package nfsclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func gather(t *testing.T, file string, n *NFSClient) (*testutil.Accumulator, error) {
	t.Helper()
	t.Setenv("MOUNT_PROC", file)
	require.NoError(t, n.Validate())
	require.NoError(t, n.Init())
	acc := &testutil.Accumulator{}
	return acc, n.Gather(context.Background(), acc)
}

// fieldsOf returns the fields of the one metric of name with the given tags.
func fieldsOf(t *testing.T, acc *testutil.Accumulator, name string, tags map[string]string) map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range acc.MetricsNamed(name) {
		if testutil.TagsOf(m)["mountpoint"] == tags["mountpoint"] && testutil.TagsOf(m)["operation"] == tags["operation"] {
			require.Equal(t, tags, testutil.TagsOf(m))
			out = append(out, testutil.FieldsOf(m))
		}
	}
	require.Len(t, out, 1, "%s %v", name, tags)
	return out[0]
}

// TestTelegrafsMountstats reads Telegraf's test file and checks what Telegraf's tests
// expect of it, then the whole output against a golden list.
func TestTelegrafsMountstats(t *testing.T) {
	file := filepath.Join("testdata", "mountstats")
	acc, err := gather(t, file, &NFSClient{})
	require.NoError(t, err)
	a := map[string]string{"mountpoint": "/A", "serverexport": "1.2.3.4:/storage/NFS"}
	with := func(op string) map[string]string {
		out := map[string]string{"operation": op}
		for k, v := range a {
			out[k] = v
		}
		return out
	}
	require.Equal(t, map[string]any{"ops": uint64(600), "retrans": uint64(1), "bytes": uint64(1207), "rtt": uint64(606),
		"exe": uint64(607), "rtt_per_op": 1.01}, fieldsOf(t, acc, "nfsstat", with("READ")))
	require.Equal(t, map[string]any{"ops": uint64(700), "retrans": uint64(1), "bytes": uint64(1407), "rtt": uint64(706),
		"exe": uint64(707), "rtt_per_op": 1.0085714285714287}, fieldsOf(t, acc, "nfsstat", with("WRITE")))
	require.Len(t, acc.Metrics(), 8, "READ and WRITE of four mounts, nothing more without fullstat")

	acc, err = gather(t, file, &NFSClient{Fullstat: true})
	require.NoError(t, err)
	events := fieldsOf(t, acc, "nfs_events", a)
	require.Len(t, events, len(eventsFields))
	require.Equal(t, uint64(26188427), events["attrinvalidates"])
	require.Equal(t, uint64(785551), events["extendwrite"])
	require.Equal(t, map[string]any{"normalreadbytes": uint64(204440464584), "normalwritebytes": uint64(110857586443),
		"directreadbytes": uint64(783170354688), "directwritebytes": uint64(296174954496), "serverreadbytes": uint64(1134399088816),
		"serverwritebytes": uint64(407107155723), "readpages": uint64(85749323), "writepages": uint64(30784819)},
		fieldsOf(t, acc, "nfs_bytes", a))
	require.Equal(t, map[string]any{"bind_count": uint64(1), "connect_count": uint64(1), "connect_time": uint64(0),
		"idle_time": uint64(0), "rpcsends": uint64(96172963), "rpcreceives": uint64(96172963), "badxids": uint64(0),
		"inflightsends": uint64(620878754), "backlogutil": uint64(0)}, fieldsOf(t, acc, "nfs_xprt_tcp", a))
	require.Equal(t, map[string]any{"ops": uint64(500), "trans": uint64(501), "timeouts": uint64(502), "bytes_sent": uint64(503),
		"bytes_recv": uint64(504), "queue_time": uint64(505), "response_time": uint64(506), "total_time": uint64(507)},
		fieldsOf(t, acc, "nfs_ops", with("READLINK")))
	require.Equal(t, uint64(1207), fieldsOf(t, acc, "nfs_ops", with("READ"))["bytes"], "READ's nfs_ops also has nfsstat's fields, as in Telegraf")

	testutil.Golden(t, filepath.Join("testdata", "mountstats.fullstat.golden"), []byte(strings.Join(testutil.Canon(zeroTime(acc.Metrics())), "\n")+"\n"))
}

func zeroTime(ms []morse.Metric) []morse.Metric {
	for i, m := range ms {
		ms[i] = morse.NewMetric(m.Name(), m.Tags(), m.Fields(), testutil.Start)
	}
	return ms
}

func TestMountsAndOperations(t *testing.T) {
	file := filepath.Join("testdata", "mountstats")
	cases := []struct {
		name             string
		include, exclude []string
		want             []string
	}{
		{name: "no filters", want: []string{"/A", "/B", "/C", "/D"}},
		{name: "exclude one", exclude: []string{"^/A$"}, want: []string{"/B", "/C", "/D"}},
		{name: "include one", include: []string{"^/A$"}, want: []string{"/A"}},
		{name: "exclude wins", include: []string{"^/[AB]"}, exclude: []string{"^/A"}, want: []string{"/B"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acc, err := gather(t, file, &NFSClient{Fullstat: true, IncludeMounts: c.include, ExcludeMounts: c.exclude})
			require.NoError(t, err)
			seen := map[string]bool{}
			for _, m := range acc.Metrics() {
				seen[testutil.TagsOf(m)["mountpoint"]] = true
			}
			var got []string
			for _, p := range []string{"/A", "/B", "/C", "/D"} {
				if seen[p] {
					got = append(got, p)
				}
			}
			require.Equal(t, c.want, got)
		})
	}

	acc, err := gather(t, file, &NFSClient{Fullstat: true, IncludeOperations: []string{"READ", "OPEN", "GETATTR"}, ExcludeOperations: []string{"GETATTR"}})
	require.NoError(t, err)
	var ops []string
	for _, m := range acc.MetricsNamed("nfs_ops") {
		ops = append(ops, testutil.TagsOf(m)["mountpoint"]+" "+testutil.TagsOf(m)["operation"])
	}
	require.Equal(t, []string{"/A READ", "/B READ", "/B OPEN", "/C READ", "/D READ", "/D OPEN"}, ops, "OPEN is NFSv4's only")

	require.ErrorContains(t, (&NFSClient{IncludeMounts: []string{"[bad"}, ExcludeMounts: []string{"(also"}}).Validate(),
		"include_mounts: pattern \"[bad\"")
}

func TestLargeValuesAndFailures(t *testing.T) {
	dir := t.TempDir()
	head := "device 2.2.2.2:/nfsdata/ mounted on /B with fstype nfs4 statvers=1.1\n" +
		"    RPC iostats version: 1.0  p/v: 100003/4 (nfs)\n    per-op statistics\n"
	large := filepath.Join(dir, "large")
	require.NoError(t, os.WriteFile(large, []byte(head+"    SETCLIENTID: 218 216 0 53568 12960 18446744073709531008 134 197\n"), 0o644))
	acc, err := gather(t, large, &NFSClient{Fullstat: true})
	require.NoError(t, err)
	require.Equal(t, uint64(18446744073709531008), fieldsOf(t, acc, "nfs_ops",
		map[string]string{"mountpoint": "/B", "serverexport": "2.2.2.2:/nfsdata/", "operation": "SETCLIENTID"})["queue_time"])

	tooLarge := filepath.Join(dir, "too-large")
	require.NoError(t, os.WriteFile(tooLarge, []byte(head+"    SETCLIENTID: 218 216 0 53568 12960 18446744073709551616 134 197\n"), 0o644))
	_, err = gather(t, tooLarge, &NFSClient{Fullstat: true})
	require.ErrorContains(t, err, "value out of range")

	_, err = gather(t, filepath.Join(dir, "missing"), &NFSClient{})
	require.ErrorContains(t, err, "reading the mount statistics")

	acc, err = gather(t, "", &NFSClient{Fullstat: true})
	require.NoError(t, err, "this machine's /proc/self/mountstats, without NFS mounts")
	require.Zero(t, acc.NMetrics())
}
