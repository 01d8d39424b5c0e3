// Package docker is the inputs.docker plugin: every interval it asks the Docker Engine API
// (a unix socket, or TCP with or without TLS) for the daemon's counts and, for each
// container whose name and state pass the filters, its state, health and resource usage,
// with Telegraf 1.39.3's options, measurements (docker, docker_container_status,
// docker_container_health, docker_container_mem, docker_container_cpu,
// docker_container_net, docker_container_blkio, docker_disk_usage and the devicemapper
// ones), tags, fields and field types.
//
// It speaks the API over net/http itself rather than through Docker's client module: the
// five requests it makes need a few dozen lines, its answers are decoded into types that
// hold only what it reports, and the agent's binary carries none of the client's
// dependencies.
//
// CPU usage_percent is the share of the host's CPU time the container used between two
// samples, as in Telegraf. The daemon samples every container once a second and answers a
// request for stats at its next sample. Telegraf asks for two samples at every gather, so
// that each of its gathers takes one to two seconds; morse asks for two only the first time
// it sees a container, and afterwards for one, which it compares with the sample of the
// previous gather: the percentage is then the average over the interval, and a gather
// waits for one sample of the daemon's, for all containers at once.
package docker

import (
	"context"
	_ "embed"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about docker containers"

//go:embed sample.conf
var sampleConfig string

// Docker is the inputs.docker plugin and its configuration. Build it with New.
type Docker struct {
	// Endpoint is "unix:///path", "tcp://host:port" or "ENV" (DOCKER_HOST,
	// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY, as the Docker CLI reads them).
	Endpoint string `toml:"endpoint"`
	// GatherServices asks for Swarm services; morse refuses it (see Validate).
	GatherServices bool `toml:"gather_services"`
	// SourceTag adds the tag source, the container's ID cut to 12 characters.
	SourceTag bool `toml:"source_tag"`
	// ContainerNameInclude and ContainerNameExclude select containers by name (globs); all
	// when both are empty.
	ContainerNameInclude []string `toml:"container_name_include"`
	ContainerNameExclude []string `toml:"container_name_exclude"`
	// ContainerStateInclude and ContainerStateExclude select containers by state (globs:
	// created, restarting, running, removing, paused, exited, dead); "running" only when
	// both are empty.
	ContainerStateInclude []string `toml:"container_state_include"`
	ContainerStateExclude []string `toml:"container_state_exclude"`
	// StorageObjects are the objects whose disk usage docker_disk_usage reports:
	// "container", "image", "volume".
	StorageObjects []string `toml:"storage_objects"`
	// Timeout bounds each request to the daemon, 5s by default.
	Timeout morse.Duration `toml:"timeout"`
	// PodmanCacheTTL is Telegraf's age limit of the previous samples it keeps for Podman.
	// morse keeps the previous sample of every container it still sees, for any engine, so
	// the option changes nothing.
	PodmanCacheTTL morse.Duration `toml:"podman_cache_ttl"`
	// PerDeviceInclude are the classes reported per device: "cpu", "blkio", "network".
	PerDeviceInclude []string `toml:"perdevice_include"`
	// TotalInclude are the classes reported as one total per container.
	TotalInclude []string `toml:"total_include"`
	// LabelInclude and LabelExclude select the container labels that become tags (globs);
	// all when both are empty.
	LabelInclude []string `toml:"docker_label_include"`
	LabelExclude []string `toml:"docker_label_exclude"`
	// TagEnv names the environment variables of a container that become tags.
	TagEnv []string `toml:"tag_env"`
	// Config is the TLS client keys, for a TCP endpoint.
	tlsclient.Config

	api                    *apiClient
	names, states, labels  includeExclude
	perCPU, perNet, perBlk bool
	totCPU, totNet, totBlk bool
	disk                   diskObjects

	mu   sync.Mutex
	prev map[string]cpuSample // the last sample of each container, by ID
	host engineTags           // from the last /info
}

// engineTags are the daemon's tags of every metric.
type engineTags struct{ host, version string }

// workers is how many containers a gather asks about at once, and so how many
// connections it keeps. The daemon answers a request for stats at the next tick of its
// collector, once a second for every container: requests sent at once are answered
// together, where requests sent in turn would take a second each.
const workers = 64

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Docker)(nil)
	_ morse.ServiceInput = (*Docker)(nil)
	_ morse.Validator    = (*Docker)(nil)
	_ morse.Initializer  = (*Docker)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Docker {
	return &Docker{
		Endpoint:         "unix:///var/run/docker.sock",
		PerDeviceInclude: []string{"cpu"},
		TotalInclude:     []string{"cpu", "blkio", "network"},
		Timeout:          morse.Duration(5 * time.Second),
		PodmanCacheTTL:   morse.Duration(60 * time.Second),
	}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "docker",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (d *Docker) Validate() error {
	errs := []error{d.Config.Validate()}
	if d.GatherServices {
		errs = append(errs, morse.Errorf("gather_services", "Swarm services are not supported: "+
			"set gather_services = false and run Telegraf's docker input on one manager node for docker_swarm"))
	}
	for _, opt := range []struct {
		key  string
		vals []string
	}{{"perdevice_include", d.PerDeviceInclude}, {"total_include", d.TotalInclude}} {
		for _, v := range opt.vals {
			if v != "cpu" && v != "network" && v != "blkio" {
				errs = append(errs, morse.Errorf(opt.key, "invalid %q: use \"cpu\", \"network\" or \"blkio\"", v))
			}
		}
	}
	for _, v := range d.StorageObjects {
		if v != "container" && v != "image" && v != "volume" {
			errs = append(errs, morse.Errorf("storage_objects", "invalid storage object type %q: use \"container\", \"image\" or \"volume\"", v))
		}
	}
	if d.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	for _, f := range []struct {
		key  string
		pats []string
	}{{"container_name_include", d.ContainerNameInclude}, {"container_name_exclude", d.ContainerNameExclude},
		{"container_state_include", d.ContainerStateInclude}, {"container_state_exclude", d.ContainerStateExclude},
		{"docker_label_include", d.LabelInclude}, {"docker_label_exclude", d.LabelExclude}} {
		if _, err := glob.Compile(f.key, f.pats); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := newAPIClient(d.Endpoint, nil, 1); err != nil && d.Endpoint != "ENV" {
		errs = append(errs, morse.Errorf("endpoint", "%v", err))
	}
	return errors.Join(errs...)
}

// Init applies the defaults of options left empty, compiles the filters and builds the
// client; it connects to nothing, so that a daemon that is down at start delays nothing.
func (d *Docker) Init() error {
	if err := d.Validate(); err != nil {
		return err
	}
	if d.Endpoint == "" {
		d.Endpoint = "unix:///var/run/docker.sock"
	}
	if d.Timeout == 0 {
		d.Timeout = morse.Duration(5 * time.Second)
	}
	states := d.ContainerStateInclude
	if len(states) == 0 && len(d.ContainerStateExclude) == 0 {
		states = []string{"running"}
	}
	var err error
	if d.names, err = newIncludeExclude("container_name", d.ContainerNameInclude, d.ContainerNameExclude); err != nil {
		return err
	}
	if d.states, err = newIncludeExclude("container_state", states, d.ContainerStateExclude); err != nil {
		return err
	}
	if d.labels, err = newIncludeExclude("docker_label", d.LabelInclude, d.LabelExclude); err != nil {
		return err
	}
	d.perCPU, d.perNet, d.perBlk = slices.Contains(d.PerDeviceInclude, "cpu"),
		slices.Contains(d.PerDeviceInclude, "network"), slices.Contains(d.PerDeviceInclude, "blkio")
	d.totCPU, d.totNet, d.totBlk = slices.Contains(d.TotalInclude, "cpu"),
		slices.Contains(d.TotalInclude, "network"), slices.Contains(d.TotalInclude, "blkio")
	d.disk = newDiskObjects(d.StorageObjects)
	tlsCfg, err := d.Config.TLSConfig()
	if err != nil {
		return err
	}
	if d.api, err = newAPIClient(d.Endpoint, tlsCfg, workers); err != nil {
		return morse.Errorf("endpoint", "%v", err)
	}
	d.prev = map[string]cpuSample{}
	return nil
}

// Start does nothing: the plugin is a service input only so that Stop closes the kept
// connections.
func (d *Docker) Start(context.Context, morse.Accumulator) error { return nil }

// Stop closes the kept connections.
func (d *Docker) Stop() {
	if d.api != nil {
		d.api.closeIdle()
	}
}

// includeExclude passes a string that matches an include pattern (any, without patterns)
// and no exclude pattern, as Telegraf's include/exclude filters do.
type includeExclude struct{ include, exclude *glob.Matcher }

func newIncludeExclude(prefix string, include, exclude []string) (includeExclude, error) {
	in, err := glob.Compile(prefix+"_include", include)
	if err != nil {
		return includeExclude{}, err
	}
	ex, err := glob.Compile(prefix+"_exclude", exclude)
	return includeExclude{include: in, exclude: ex}, err
}

func (f includeExclude) match(s string) bool {
	return (f.include == nil || f.include.Match(s)) && !f.exclude.Match(s)
}
