// Package temp is the inputs.temp plugin: the temperatures of the hwmon sensors under
// /sys/class/hwmon and, where there are none or always_gather_zones asks, of the thermal
// zones under /sys/class/thermal, read under $HOST_SYS when it is set, as in Telegraf.
//
// Each reading is a temp metric tagged sensor, with the float field temp in degrees
// Celsius. metric_format "v2" (the default) names a sensor chip_label ("coretemp_core_0");
// "v1" names it as Telegraf before 1.22.4 did ("coretemp_core0_input") and adds a metric
// for each limit the sensor has (_crit, _max, _min, _alarm...). add_device_tag tags the
// device the chip sits on, which tells apart two chips of one name.
package temp

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/hostfs"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about temperature"

//go:embed sample.conf
var sampleConfig string

// Temperature is the inputs.temp plugin and its configuration.
type Temperature struct {
	// MetricFormat is "v2" (the default, also when empty) or "v1", the sensor naming of
	// Telegraf before 1.22.4.
	MetricFormat string `toml:"metric_format"`
	// DeviceTag adds the device tag: the name of the device the hwmon chip belongs to.
	DeviceTag bool `toml:"add_device_tag"`
	// ThermalZones reads the thermal zones even where hwmon sensors exist.
	ThermalZones bool `toml:"always_gather_zones"`

	log *slog.Logger
}

var (
	_ morse.Input        = (*Temperature)(nil)
	_ morse.Validator    = (*Temperature)(nil)
	_ morse.LoggerSetter = (*Temperature)(nil)
)

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "temp",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return &Temperature{} },
	})
}

// Validate refuses a metric_format other than "v1" and "v2", as Telegraf's Init does.
func (t *Temperature) Validate() error {
	switch t.MetricFormat {
	case "", "v1", "v2":
		return nil
	}
	return morse.Errorf("metric_format", "invalid %q: choose \"v1\" or \"v2\"", t.MetricFormat)
}

// SetLogger gives the plugin the engine's logger.
func (t *Temperature) SetLogger(l *slog.Logger) { t.log = l }

func (t *Temperature) logger() *slog.Logger {
	if t.log == nil {
		return slog.Default()
	}
	return t.log
}

// reading is one sensor: its chip name, lower-case label, device and temperature, and for
// v1 the other values of the sensor by suffix.
type reading struct {
	name, label, device string
	temp                float64
	limits              []limit
}

type limit struct {
	suffix string
	value  float64
}

// Gather reports every sensor. A sensor that cannot be read now is left out (logged at
// debug level: a chip asleep is normal); a zone's read error other than "try again" is an
// error of the gather, and the other sensors are still reported.
func (t *Temperature) Gather(_ context.Context, acc morse.Accumulator) error {
	sys := hostfs.Sys()
	readings, err := t.hwmon(acc, sys)
	if err != nil {
		return fmt.Errorf("getting temperatures failed: %w", err)
	}
	if len(readings) == 0 || t.ThermalZones {
		zones, err := t.zones(acc, sys)
		if err != nil {
			return fmt.Errorf("getting temperatures (via fallback) failed: %w", err)
		}
		readings = append(readings, zones...)
	}
	now := time.Now()
	for _, r := range readings {
		t.report(acc, r, now)
	}
	return nil
}

func (t *Temperature) report(acc morse.Accumulator, r reading, now time.Time) {
	add := func(sensor string, v float64) {
		tags := []morse.Tag{{Key: "sensor", Value: sensor}}
		if t.DeviceTag && r.device != "" {
			tags = append(tags, morse.Tag{Key: "device", Value: r.device})
		}
		acc.AddMetric(morse.NewMetric("temp", tags, []morse.Field{{Key: "temp", Value: morse.Float(v)}}, now))
	}
	sensor := r.name
	if t.MetricFormat == "v1" {
		if r.label != "" {
			sensor += "_" + strings.ReplaceAll(r.label, " ", "")
		}
		add(sensor+"_input", r.temp)
		for _, l := range r.limits {
			add(sensor+"_"+l.suffix, l.value)
		}
		return
	}
	if r.label != "" {
		sensor += "_" + strings.ReplaceAll(r.label, " ", "_")
	}
	add(sensor, r.temp)
}

// hwmon reads the temp*_input sensors of every hwmon chip, or of the chips' device
// directories where the kernel puts them there (older CentOS kernels).
func (t *Temperature) hwmon(acc morse.Accumulator, sys string) ([]reading, error) {
	inputs, err := filepath.Glob(filepath.Join(sys, "class", "hwmon", "hwmon*", "temp*_input"))
	if err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		if inputs, err = filepath.Glob(filepath.Join(sys, "class", "hwmon", "hwmon*", "device", "temp*_input")); err != nil {
			return nil, err
		}
	}
	out := make([]reading, 0, len(inputs))
	for _, in := range inputs {
		if r, ok := t.sensor(acc, in); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// sensor reads one temp<N>_input and the files beside it.
func (t *Temperature) sensor(acc morse.Accumulator, input string) (reading, bool) {
	dir := filepath.Dir(input)
	prefix, _, _ := strings.Cut(filepath.Base(input), "_")
	device, err := os.Readlink(filepath.Join(dir, "device"))
	if err == nil {
		device = filepath.Base(device)
	}
	r := reading{name: device, device: device}
	if b, err := os.ReadFile(filepath.Join(dir, "name")); err == nil {
		r.name = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, prefix+"_label")); err == nil {
		r.label = strings.ToLower(strings.TrimSpace(string(b)))
	}
	// A chip asleep would block a plain read, and the gather with it.
	b, err := readNonblocking(input)
	if err != nil {
		t.logger().Debug("cannot read a temperature", "file", input, "error", err)
		return r, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		acc.AddError(fmt.Errorf("parsing the temperature of %q: %w", input, err))
		return r, false
	}
	r.temp = v / 1000
	if t.MetricFormat == "v1" {
		r.limits = limits(dir, prefix)
	}
	return r, true
}

// limits reads the other numeric files of a sensor (crit, max, min, alarm, ...), in
// millidegrees, sorted by suffix.
func limits(dir, prefix string) []limit {
	files, _ := filepath.Glob(filepath.Join(dir, prefix+"_*"))
	var out []limit
	for _, f := range files {
		_, suffix, _ := strings.Cut(filepath.Base(f), "_")
		if suffix == "input" || suffix == "label" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
			out = append(out, limit{suffix: suffix, value: v / 1000})
		}
	}
	slices.SortFunc(out, func(a, b limit) int { return strings.Compare(a.suffix, b.suffix) })
	return out
}

// zones reads the thermal zones; a zone's type is its sensor name.
func (t *Temperature) zones(acc morse.Accumulator, sys string) ([]reading, error) {
	dirs, err := filepath.Glob(filepath.Join(sys, "class", "thermal", "thermal_zone*"))
	if err != nil {
		return nil, err
	}
	out := make([]reading, 0, len(dirs))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "type"))
		if err != nil {
			acc.AddError(fmt.Errorf("cannot read the type of zone %q: %w", dir, err))
			continue
		}
		name := strings.TrimSpace(string(b))
		b, err = readNonblocking(filepath.Join(dir, "temp"))
		if errors.Is(err, unix.EAGAIN) {
			continue // the hardware is not available now: not an error, as in Telegraf
		}
		if err != nil {
			acc.AddError(fmt.Errorf("cannot read the temperature of zone %q: %w", dir, err))
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			acc.AddError(fmt.Errorf("parsing the temperature of zone %q: %w", dir, err))
			continue
		}
		out = append(out, reading{name: name, temp: v / 1000})
	}
	return out, nil
}

// readNonblocking reads at most 8 bytes (99999.999 °C in millidegrees) without blocking.
func readNonblocking(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var buf [8]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
