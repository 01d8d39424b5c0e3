package docker

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// now is the clock of the status and health metrics and of uptime; tests set it.
var now = time.Now

// cpuSample is what the next gather compares a container's CPU usage with.
type cpuSample struct {
	total, system uint64
	read          time.Time
}

// gatherContainer inspects one container and reads its stats, adding its metrics.
func (d *Docker) gatherContainer(ctx context.Context, acc morse.Accumulator, c *containerSummary) error {
	var in containerInspect
	if err := d.call(ctx, "/containers/"+c.ID+"/json", &in); err != nil {
		return err
	}
	tags := d.containerTags(c, &in)
	if in.State != nil {
		addStatus(acc, c.ID, &in, tags)
	}
	d.mu.Lock()
	prev, seen := d.prev[c.ID]
	d.mu.Unlock()
	// The first time: the daemon takes two samples a second apart, as Telegraf always
	// asks it to. Afterwards one sample, compared with the previous gather's.
	path := "/containers/" + c.ID + "/stats?stream=false&one-shot=true"
	if !seen {
		path = "/containers/" + c.ID + "/stats?stream=false"
	}
	var st containerStats
	if err := d.call(ctx, path, &st); err != nil {
		return err
	}
	if st.PreCPU.System == 0 && seen {
		st.PreCPU.Usage.Total, st.PreCPU.System = prev.total, prev.system
		st.PreRead = prev.read
	}
	d.mu.Lock()
	d.prev[c.ID] = cpuSample{total: st.CPU.Usage.Total, system: st.CPU.System, read: st.Read}
	d.mu.Unlock()
	ts := st.Read
	if ts.Before(time.Unix(0, 0)) {
		ts = now() // a container that is not running has no sample time
	}
	d.addStats(acc, c.ID, &st, tags, ts)
	return nil
}

// containerTags are the tags of every metric of a container, sorted: the engine's, the
// name and image, source, the labels and environment variables the options select, and
// the status. Where a label or variable has the name of another tag, the later wins, as
// in Telegraf, which sets them in that order.
func (d *Docker) containerTags(c *containerSummary, in *containerInspect) []morse.Tag {
	image, version := parseImage(c.Image)
	tags := make([]morse.Tag, 0, 8+len(c.Labels)+len(d.TagEnv))
	tags = append(tags,
		morse.Tag{Key: "engine_host", Value: d.host.host},
		morse.Tag{Key: "server_version", Value: d.host.version},
		morse.Tag{Key: "container_name", Value: containerName(c.Names)},
		morse.Tag{Key: "container_image", Value: image},
		morse.Tag{Key: "container_version", Value: version})
	if d.SourceTag {
		tags = append(tags, morse.Tag{Key: "source", Value: shortID(c.ID)})
	}
	for k, v := range c.Labels {
		if d.labels.match(k) {
			tags = append(tags, morse.Tag{Key: k, Value: v})
		}
	}
	if in.Config != nil {
		for _, name := range d.TagEnv {
			for _, kv := range in.Config.Env {
				k, v, ok := strings.Cut(kv, "=")
				if ok && k == name && strings.TrimSpace(v) != "" {
					tags = append(tags, morse.Tag{Key: k, Value: v})
				}
			}
		}
	}
	if in.State != nil {
		tags = append(tags, morse.Tag{Key: "container_status", Value: in.State.Status})
	}
	return sortTags(tags)
}

// sortTags sorts tags by key, keeping the last of each key.
func sortTags(tags []morse.Tag) []morse.Tag {
	slices.SortStableFunc(tags, func(a, b morse.Tag) int { return cmp.Compare(a.Key, b.Key) })
	out := tags[:0]
	for i, t := range tags {
		if i+1 < len(tags) && tags[i+1].Key == t.Key {
			continue
		}
		out = append(out, t)
	}
	return out
}

// withTag returns a copy of sorted tags with key set to value, in its place.
func withTag(tags []morse.Tag, key, value string) []morse.Tag {
	i, found := slices.BinarySearchFunc(tags, key, func(t morse.Tag, k string) int { return cmp.Compare(t.Key, k) })
	out := make([]morse.Tag, 0, len(tags)+1)
	out = append(out, tags[:i]...)
	out = append(out, morse.Tag{Key: key, Value: value})
	if found {
		i++
	}
	return append(out, tags[i:]...)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// addStatus adds docker_container_status and, for a container with a health check,
// docker_container_health.
func addStatus(acc morse.Accumulator, id string, in *containerInspect, tags []morse.Tag) {
	s := in.State
	t := now()
	fields := make([]morse.Field, 0, 8)
	fields = append(fields, morse.Field{Key: "container_id", Value: morse.String(id)},
		morse.Field{Key: "exitcode", Value: morse.Int(s.ExitCode)})
	finished, err := time.Parse(time.RFC3339, s.FinishedAt)
	if err == nil && !finished.IsZero() {
		fields = append(fields, morse.Field{Key: "finished_at", Value: morse.Int(finished.UnixNano())})
	} else {
		finished = t // still running: uptime runs to now
	}
	fields = append(fields,
		morse.Field{Key: "oomkilled", Value: morse.Bool(s.OOMKilled)},
		morse.Field{Key: "pid", Value: morse.Int(s.Pid)},
		morse.Field{Key: "restart_count", Value: morse.Int(in.RestartCount)})
	started, err := time.Parse(time.RFC3339, s.StartedAt)
	if err == nil && !started.IsZero() {
		uptime := finished.Sub(started)
		if finished.Before(started) {
			uptime = t.Sub(started) // restarted since it last finished
		}
		fields = append(fields, morse.Field{Key: "started_at", Value: morse.Int(started.UnixNano())},
			morse.Field{Key: "uptime_ns", Value: morse.Int(uptime.Nanoseconds())})
	}
	acc.AddMetric(morse.NewMetric("docker_container_status", tags, fields, t))
	if h := s.Health; h != nil {
		acc.AddMetric(morse.NewMetric("docker_container_health", tags, []morse.Field{
			{Key: "failing_streak", Value: morse.Int(h.FailingStreak)},
			{Key: "health_status", Value: morse.String(h.Status)},
		}, t))
	}
}
