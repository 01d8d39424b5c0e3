package docker

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
)

// Gather reports the daemon's counts, then every selected container, several at once.
// A daemon that does not answer /info fails the gather with that error alone; a container
// that fails is reported through acc.AddError and the others are still gathered.
func (d *Docker) Gather(ctx context.Context, acc morse.Accumulator) error {
	if d.api == nil {
		if err := d.Init(); err != nil {
			return err
		}
	}
	var info engineInfo
	if err := d.call(ctx, "/info", &info); err != nil {
		return fmt.Errorf("docker engine at %s: %w", d.Endpoint, err)
	}
	d.host = engineTags{host: info.Name, version: info.ServerVersion}
	d.addInfo(acc, &info, time.Now())

	var list []containerSummary
	if err := d.call(ctx, "/containers/json?all=1", &list); err != nil {
		return fmt.Errorf("listing containers failed: %w", err)
	}
	selected := make([]containerSummary, 0, len(list))
	for _, c := range list {
		name := containerName(c.Names)
		if name != "" && d.names.match(name) && d.states.match(c.State) {
			selected = append(selected, c)
		}
	}
	d.forEach(selected, func(c *containerSummary) {
		if err := d.gatherContainer(ctx, acc, c); err != nil && !isNotFound(err) {
			acc.AddError(fmt.Errorf("container %s: %w", containerName(c.Names), err))
		}
	})
	d.forget(list)
	if d.disk.any() {
		if err := d.gatherDiskUsage(ctx, acc); err != nil {
			acc.AddError(err)
		}
	}
	return nil
}

// call asks for path, bounded by the timeout option, and names a timeout as Telegraf does.
func (d *Docker) call(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(d.Timeout))
	defer cancel()
	err := d.api.get(ctx, path, v)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("timeout after %s: %w", time.Duration(d.Timeout), err)
	}
	return err
}

// forEach runs fn on every container, at most workers at once.
func (d *Docker) forEach(cs []containerSummary, fn func(*containerSummary)) {
	n := min(workers, len(cs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range n {
		wg.Go(func() {
			for i := range next {
				fn(&cs[i])
			}
		})
	}
	for i := range cs {
		next <- i
	}
	close(next)
	wg.Wait()
}

// forget drops the previous samples of containers that are gone, so that the map holds no
// more entries than the daemon has containers.
func (d *Docker) forget(list []containerSummary) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.prev) == 0 {
		return
	}
	seen := make(map[string]struct{}, len(list))
	for _, c := range list {
		seen[c.ID] = struct{}{}
	}
	for id := range d.prev {
		if _, ok := seen[id]; !ok {
			delete(d.prev, id)
		}
	}
}

// addInfo adds the docker measurement (as two metrics, as Telegraf does) and, for the
// devicemapper storage driver, docker_data, docker_metadata and docker_devicemapper.
func (d *Docker) addInfo(acc morse.Accumulator, info *engineInfo, now time.Time) {
	tags := []morse.Tag{{Key: "engine_host", Value: d.host.host}, {Key: "server_version", Value: d.host.version}}
	acc.AddMetric(morse.NewMetric("docker", tags, []morse.Field{
		{Key: "n_containers", Value: morse.Int(info.Containers)},
		{Key: "n_containers_paused", Value: morse.Int(info.ContainersPaused)},
		{Key: "n_containers_running", Value: morse.Int(info.ContainersRunning)},
		{Key: "n_containers_stopped", Value: morse.Int(info.ContainersStopped)},
		{Key: "n_cpus", Value: morse.Int(info.NCPU)},
		{Key: "n_goroutines", Value: morse.Int(info.NGoroutines)},
		{Key: "n_images", Value: morse.Int(info.Images)},
		{Key: "n_listener_events", Value: morse.Int(info.NEventsListener)},
		{Key: "n_used_file_descriptors", Value: morse.Int(info.NFd)},
	}, now))
	acc.AddMetric(morse.NewMetric("docker", tags, []morse.Field{{Key: "memory_total", Value: morse.Int(info.MemTotal)}}, now))
	if len(info.DriverStatus) > 0 {
		for _, m := range driverStatusMetrics(info.DriverStatus, d.host, now) {
			acc.AddMetric(m)
		}
	}
}

// driverStatusMetrics reads the sizes that the devicemapper storage driver reports in
// DriverStatus, as Telegraf does: the legacy docker (pool_blocksize), docker_data and
// docker_metadata measurements tagged unit=bytes, and docker_devicemapper. Other drivers'
// entries are not sizes and give nothing.
func driverStatusMetrics(status [][2]string, host engineTags, now time.Time) []morse.Metric {
	unitTags := []morse.Tag{{Key: "engine_host", Value: host.host}, {Key: "server_version", Value: host.version}, {Key: "unit", Value: "bytes"}}
	var out []morse.Metric
	var data, meta, dm []morse.Field
	pool := ""
	for _, kv := range status {
		name := strings.ToLower(strings.ReplaceAll(kv[0], " ", "_"))
		if name == "pool_name" {
			pool = kv[1]
			continue
		}
		v, err := parseSize(kv[1])
		if err != nil {
			continue
		}
		switch name {
		case "pool_blocksize", "base_device_size", "data_space_used", "data_space_total", "data_space_available",
			"metadata_space_used", "metadata_space_total", "metadata_space_available", "thin_pool_minimum_free_space":
			dm = append(dm, morse.Field{Key: name + "_bytes", Value: morse.Int(v)})
		}
		switch {
		case name == "pool_blocksize":
			out = append(out, morse.NewMetric("docker", unitTags, []morse.Field{{Key: "pool_blocksize", Value: morse.Int(v)}}, now))
		case strings.HasPrefix(name, "data_space_"):
			data = append(data, morse.Field{Key: strings.TrimPrefix(name, "data_space_"), Value: morse.Int(v)})
		case strings.HasPrefix(name, "metadata_space_"):
			meta = append(meta, morse.Field{Key: strings.TrimPrefix(name, "metadata_space_"), Value: morse.Int(v)})
		}
	}
	if len(data) > 0 {
		out = append(out, morse.NewMetric("docker_data", unitTags, data, now))
	}
	if len(meta) > 0 {
		out = append(out, morse.NewMetric("docker_metadata", unitTags, meta, now))
	}
	if len(dm) > 0 {
		tags := []morse.Tag{{Key: "engine_host", Value: host.host}, {Key: "server_version", Value: host.version}}
		if pool != "" {
			tags = append(tags, morse.Tag{Key: "pool_name", Value: pool})
		}
		out = append(out, morse.NewMetric("docker_devicemapper", tags, dm, now))
	}
	return out
}

var sizeRegex = regexp.MustCompile(`^(\d+(\.\d+)*) ?([kKmMgGtTpP])?[bB]?$`)

// parseSize reads a size as the daemon writes it ("1.5 GB", "65.54 kB"), in powers of
// 1000 as Telegraf reads them.
func parseSize(s string) (int64, error) {
	m := sizeRegex.FindStringSubmatch(s)
	if m == nil {
		return -1, fmt.Errorf("invalid size: %s", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1, err
	}
	mul := map[string]float64{"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}[strings.ToLower(m[3])]
	if mul != 0 {
		f *= mul
	}
	return int64(f), nil
}

// containerName is the first of a container's names that is not a link's (those hold a
// second slash), without the leading slash.
func containerName(names []string) string {
	for _, n := range names {
		n = strings.TrimPrefix(n, "/")
		if !strings.Contains(n, "/") {
			return n
		}
	}
	return ""
}

// parseImage splits an image reference into name and version ("unknown" without a tag),
// keeping a registry host in the name, as Telegraf does.
func parseImage(image string) (name, version string) {
	domain, rest := "", image
	if i := strings.IndexByte(image, '/'); i >= 0 && (strings.ContainsAny(image[:i], ".:") || image[:i] == "localhost") {
		domain, rest = image[:i], image[i+1:]
	}
	name, version = rest, "unknown"
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		name, version = rest[:i], rest[i+1:]
	}
	if domain != "" {
		name = domain + "/" + name
	}
	return name, version
}
