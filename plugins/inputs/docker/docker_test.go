package docker

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

const golden = "testdata/docker.golden"

// fleet is the test's containers on the real dockerd, by role, with the name prefix that
// selects them alone among whatever else the daemon runs.
type fleet struct {
	prefix string
	ids    map[string]string // role → ID
}

// The roles and the state each container is in.
var roleStatus = map[string]string{
	"web": "running", "paused": "paused", "exited": "exited", "created": "created",
	"healthy": "running", "sick": "running",
}

// startFleet starts one container per role on the real dockerd, all at once.
func startFleet(t testing.TB) fleet {
	f := fleet{prefix: fmt.Sprintf("morse-docker-%d-", os.Getpid()), ids: map[string]string{}}
	three := 3
	specs := map[string]testserver.BoxSpec{
		"web": {Labels: map[string]string{"app": "web", "tier": "front"},
			Env: []string{"IDLEBOX_ROLE=frontend", "EMPTY= "}, Spin: true},
		"paused":  {Paused: true, Labels: map[string]string{"app": "batch"}},
		"exited":  {Exit: &three},
		"created": {Create: true},
		"healthy": {Health: "ok"},
		"sick":    {Health: "fail", Volume: true},
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for role, spec := range specs {
		spec.Name = f.prefix + role
		// StartBox fails the test with runtime.Goexit, which still runs wg.Go's Done.
		wg.Go(func() {
			id := testserver.StartBox(t, spec)
			mu.Lock()
			f.ids[role] = id
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, f.ids, len(specs))
	return f
}

// newDocker decodes config (Telegraf's keys) into a plugin with the defaults, selecting
// the fleet's containers, and initialises it.
func (f fleet) newDocker(t testing.TB, config string) *Docker {
	t.Helper()
	d := New()
	d.ContainerNameInclude = []string{f.prefix + "*"}
	md, err := toml.Decode(config, d)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, d.Init())
	t.Cleanup(d.Stop)
	return d
}

// gather gathers once, with no error.
func gather(t testing.TB, d *Docker) *testutil.Accumulator {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, d.Gather(testutil.Context(t), acc))
	require.Empty(t, acc.Errors())
	return acc
}

// byContainer returns the metrics named name, by container_name without the prefix.
func (f fleet) byContainer(acc *testutil.Accumulator, name string) map[string][]morse.Metric {
	out := map[string][]morse.Metric{}
	for _, m := range acc.MetricsNamed(name) {
		n, _ := m.Tag("container_name")
		out[strings.TrimPrefix(n, f.prefix)] = append(out[strings.TrimPrefix(n, f.prefix)], m)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestAgainstDockerd gathers the fleet's containers from the real dockerd: every
// measurement with Telegraf's tags, fields and types (the golden list), states, health,
// labels and environment tags, and what each filter selects.
func TestAgainstDockerd(t *testing.T) {
	f := startFleet(t)
	all := all()
	t.Run("golden", func(t *testing.T) {
		t.Parallel()
		shapes := testutil.LoadGolden(t, golden)
		d := f.newDocker(t, shapes.Config)
		acc := gather(t, d)
		require.Empty(t, shapes.Check(acc.Metrics()))
		f.checkEverything(t, acc, all)

		// The second gather asks for one sample and compares it with the first gather's:
		// the spinning container used some CPU in between.
		first := f.cpuTotal(t, acc, "web")
		acc = gather(t, d)
		require.Empty(t, shapes.Check(acc.Metrics()))
		second := f.cpuTotal(t, acc, "web")
		cpus := len(f.byContainer(acc, "docker_container_cpu")["web"]) - 1 // per CPU, and cpu-total
		want := float64(second["usage_total"].(uint64)-first["usage_total"].(uint64)) /
			float64(second["usage_system"].(uint64)-first["usage_system"].(uint64)) * float64(cpus) * 100
		require.Greater(t, want, 0.0)
		require.InDelta(t, want, second["usage_percent"], 1e-9)
		require.Len(t, d.prev, len(all), "one previous sample per container gathered")
	})
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		acc := gather(t, f.newDocker(t, ""))
		require.Empty(t, testutil.LoadGolden(t, golden).Defaults().Check(acc.Metrics()))
		// Only running containers (paused ones are "paused"), all their labels as tags,
		// cpu per CPU and in total, network and blkio in total only.
		require.Equal(t, []string{"healthy", "sick", "web"}, keys(f.byContainer(acc, "docker_container_status")))
		require.Equal(t, []string{"healthy", "sick", "web"}, keys(f.byContainer(acc, "docker_container_mem")))
		web := f.byContainer(acc, "docker_container_status")["web"][0]
		require.Equal(t, map[string]string{"app": "web", "tier": "front"}, pick(web, "app", "tier"))
		for _, m := range f.byContainer(acc, "docker_container_net")["web"] {
			require.Equal(t, "total", tag(m, "network"))
		}
		for _, m := range f.byContainer(acc, "docker_container_blkio")["web"] {
			require.Equal(t, "total", tag(m, "device"))
		}
		require.Len(t, f.byContainer(acc, "docker_container_net")["web"], 1)
	})
	t.Run("storage_objects", func(t *testing.T) {
		t.Parallel()
		f.diskUsage(t)
	})
	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		f.overTLS(t)
	})
	t.Run("filters", func(t *testing.T) {
		t.Parallel()
		acc := gather(t, f.newDocker(t, `
container_name_exclude = ["*-sick"]
container_state_include = ["running", "paused", "exited"]
container_state_exclude = ["exited"]
docker_label_include = ["ap*"]
docker_label_exclude = ["tier"]
perdevice_include = []
total_include = ["network"]
`))
		require.Equal(t, []string{"healthy", "paused", "web"}, keys(f.byContainer(acc, "docker_container_status")))
		web := f.byContainer(acc, "docker_container_status")["web"][0]
		require.Equal(t, map[string]string{"app": "web"}, pick(web, "app", "tier"))
		require.False(t, acc.HasMeasurement("docker_container_cpu"))
		require.False(t, acc.HasMeasurement("docker_container_blkio"))
		net := f.byContainer(acc, "docker_container_net")
		require.Equal(t, []string{"healthy", "paused", "web"}, keys(net))
		for _, ms := range net {
			require.Len(t, ms, 1)
			require.Equal(t, "total", tag(ms[0], "network"))
		}
	})
}

// diskUsage checks storage_objects: the layers' size, the fleet's containers, the idlebox
// image and the sick container's volume, with the golden config's options.
func (f fleet) diskUsage(t *testing.T) {
	shapes := testutil.LoadGolden(t, golden)
	acc := gather(t, f.newDocker(t, shapes.Config+`storage_objects = ["container", "image", "volume"]`))
	require.Empty(t, shapes.Check(acc.Metrics()))
	var layers, volumes int
	containers := map[string]bool{}
	images := map[string]bool{}
	for _, m := range acc.MetricsNamed("docker_disk_usage") {
		fields := testutil.FieldsOf(m)
		switch {
		case fields["layers_size"] != nil:
			layers++
			require.Greater(t, fields["layers_size"], int64(0))
		case tag(m, "container_name") != "":
			if n, ok := strings.CutPrefix(tag(m, "container_name"), f.prefix); ok {
				containers[n] = true
				require.Equal(t, testserver.BoxImageRepo, tag(m, "container_image"))
			}
		case tag(m, "image_id") != "":
			require.Len(t, tag(m, "image_id"), 12)
			images[tag(m, "image_name")] = true
		case tag(m, "volume_name") != "":
			volumes++
		}
	}
	require.Equal(t, 1, layers)
	require.Equal(t, all(), keys(containers), "every container, whatever its state")
	require.True(t, images[testserver.BoxImageRepo])
	require.GreaterOrEqual(t, volumes, 1)
}

func all() []string { return keys(roleStatus) }

// cpuTotal returns the fields of role's docker_container_cpu with cpu=cpu-total.
func (f fleet) cpuTotal(t *testing.T, acc *testutil.Accumulator, role string) map[string]any {
	t.Helper()
	cpu := f.byContainer(acc, "docker_container_cpu")[role]
	i := slices.IndexFunc(cpu, func(m morse.Metric) bool { return tag(m, "cpu") == "cpu-total" })
	require.GreaterOrEqual(t, i, 0)
	return testutil.FieldsOf(cpu[i])
}

// checkEverything checks what the golden config gathers of every container.
func (f fleet) checkEverything(t *testing.T, acc *testutil.Accumulator, all []string) {
	t.Helper()
	docker := acc.MetricsNamed("docker")
	require.Len(t, docker, 2, "the counts and memory_total, as two metrics as in Telegraf")
	counts := testutil.FieldsOf(docker[0])
	require.GreaterOrEqual(t, counts["n_containers"], int64(len(all)))
	require.GreaterOrEqual(t, counts["n_containers_paused"], int64(1))
	require.Greater(t, testutil.FieldsOf(docker[1])["memory_total"], int64(0))

	status := f.byContainer(acc, "docker_container_status")
	require.Equal(t, all, keys(status))
	for role, ms := range status {
		require.Len(t, ms, 1, role)
		m := ms[0]
		require.Equal(t, roleStatus[role], tag(m, "container_status"), role)
		require.Equal(t, f.ids[role], testutil.FieldsOf(m)["container_id"], role)
		require.Equal(t, f.ids[role][:12], tag(m, "source"), role)
		require.Equal(t, testserver.BoxImageRepo, tag(m, "container_image"), role)
		fields := testutil.FieldsOf(m)
		_, finished := fields["finished_at"]
		require.Equal(t, role == "exited", finished, role)
		_, started := fields["started_at"]
		require.Equal(t, role != "created", started, role)
		if role == "exited" {
			require.Equal(t, int64(3), fields["exitcode"])
			require.Equal(t, int64(0), fields["pid"])
		}
	}
	web := status["web"][0]
	require.Equal(t, map[string]string{"app": "web", "tier": "front", "IDLEBOX_ROLE": "frontend"},
		pick(web, "app", "tier", "IDLEBOX_ROLE", "EMPTY"), "labels and tag_env; an empty variable is no tag")
	require.Greater(t, testutil.FieldsOf(web)["pid"], int64(0))

	health := f.byContainer(acc, "docker_container_health")
	require.Equal(t, []string{"healthy", "sick"}, keys(health))
	require.Equal(t, "healthy", testutil.FieldsOf(health["healthy"][0])["health_status"])
	require.Equal(t, int64(0), testutil.FieldsOf(health["healthy"][0])["failing_streak"])
	require.Equal(t, "unhealthy", testutil.FieldsOf(health["sick"][0])["health_status"])
	require.GreaterOrEqual(t, testutil.FieldsOf(health["sick"][0])["failing_streak"], int64(1))

	// Stats: every container has mem, cpu-total and blkio total; only running ones
	// (paused included) have memory_stats keys and a network.
	mem := f.byContainer(acc, "docker_container_mem")
	require.Equal(t, all, keys(mem))
	require.Greater(t, testutil.FieldsOf(mem["web"][0])["usage"], uint64(0))
	require.Greater(t, testutil.FieldsOf(mem["web"][0])["limit"], uint64(0))
	require.Equal(t, uint64(0), testutil.FieldsOf(mem["exited"][0])["limit"])
	require.Equal(t, all, keys(f.byContainer(acc, "docker_container_cpu")))
	require.Equal(t, all, keys(f.byContainer(acc, "docker_container_blkio")))
	net := f.byContainer(acc, "docker_container_net")
	require.Equal(t, []string{"healthy", "paused", "sick", "web"}, keys(net))
	var networks []string
	for _, m := range net["web"] {
		networks = append(networks, tag(m, "network"))
	}
	slices.Sort(networks)
	require.Equal(t, []string{"eth0", "total"}, networks)
}

func tag(m morse.Metric, k string) string {
	v, _ := m.Tag(k)
	return v
}

// pick returns the tags among ks that m has.
func pick(m morse.Metric, ks ...string) map[string]string {
	out := map[string]string{}
	for _, k := range ks {
		if v, ok := m.Tag(k); ok {
			out[k] = v
		}
	}
	return out
}
