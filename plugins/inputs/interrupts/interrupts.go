// Package interrupts is the inputs.interrupts plugin: the counts of /proc/interrupts (the
// interrupts measurement) and /proc/softirqs (soft_interrupts) per IRQ, under Telegraf's
// tags and fields.
//
// With cpu_as_tag each CPU's count is a metric of its own, tagged cpu="cpuN", with the field
// count; without it one metric per IRQ carries CPU0..CPUn and total. All counts are
// integers, as in Telegraf. Unlike Telegraf, which always reads /proc, the files are read
// under $HOST_PROC when it is set, as by the other host inputs; the counts are the host's
// either way, as the kernel does not namespace them.
package interrupts

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/hostfs"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "This plugin gathers interrupts data from /proc/interrupts and /proc/softirqs."

//go:embed sample.conf
var sampleConfig string

// Interrupts is the inputs.interrupts plugin and its configuration.
type Interrupts struct {
	// CPUAsTag reports one metric per CPU and IRQ, tagged cpu, instead of one per IRQ with a
	// field per CPU.
	CPUAsTag bool `toml:"cpu_as_tag"`
}

var _ morse.Input = (*Interrupts)(nil)

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "interrupts",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return &Interrupts{} },
	})
}

// irq is one line of the files: its id, the controller type, the device and the count on
// each CPU that the line lists.
type irq struct {
	id, typ, device string
	cpus            []int64
}

// Gather reports both files. A file that cannot be read or parsed is an error of its own;
// the other is still reported, as in Telegraf.
func (s *Interrupts) Gather(_ context.Context, acc morse.Accumulator) error {
	now := time.Now()
	for _, src := range []struct{ measurement, file string }{
		{"interrupts", "interrupts"}, {"soft_interrupts", "softirqs"},
	} {
		path := hostfs.Proc(src.file)
		data, err := os.ReadFile(path)
		if err != nil {
			acc.AddError(fmt.Errorf("reading %q: %w", path, err))
			continue
		}
		irqs, err := parse(bytes.NewReader(data))
		if err != nil {
			acc.AddError(fmt.Errorf("parsing %q: %w", path, err))
			continue
		}
		s.report(acc, src.measurement, irqs, now)
	}
	return nil
}

// parse reads the table: a header of CPU names, then a line per IRQ. A line whose counts do
// not parse (ARM's "FIQ: usb_fiq") is skipped, as in Telegraf. A line with fewer counts
// than CPUs (x86's "ERR:" and "MIS:") has only those.
func parse(r io.Reader) ([]irq, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		return nil, sc.Err()
	}
	header := strings.Fields(sc.Text())
	if len(header) == 0 || header[0] != "CPU0" {
		return nil, fmt.Errorf("expected the first line to start with CPU0, but it is %q", sc.Text())
	}
	ncpu := len(header)
	var irqs []irq
	for sc.Scan() {
		if q, ok := parseLine(strings.Fields(sc.Text()), ncpu); ok {
			irqs = append(irqs, q)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scanning: %w", err)
	}
	return irqs, nil
}

func parseLine(words []string, ncpu int) (irq, bool) {
	if len(words) == 0 || !strings.HasSuffix(words[0], ":") {
		return irq{}, false
	}
	q := irq{id: strings.TrimRight(words[0], ":")}
	for i := 1; i <= ncpu && i < len(words); i++ {
		v, err := strconv.ParseInt(words[i], 10, 64)
		if err != nil {
			return irq{}, false
		}
		q.cpus = append(q.cpus, v)
	}
	// A numbered IRQ names its controller, then the hardware IRQ, trigger and devices; the
	// named ones (NMI, LOC, ...) have a description only.
	if _, err := strconv.ParseInt(q.id, 10, 64); err == nil && len(words) >= ncpu+2 {
		q.typ = words[ncpu+1]
		q.device = strings.Join(words[ncpu+2:], " ")
	} else if len(words) > ncpu {
		q.typ = strings.Join(words[ncpu+1:], " ")
	}
	return q, true
}

// cpuNames caches "CPU0", "cpu0" and so on, the field names and tag values.
var cpuNames, cpuTags = names("CPU"), names("cpu")

func names(prefix string) []string {
	out := make([]string, 256)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func cpuName(names []string, prefix string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return prefix + strconv.Itoa(i)
}

// report adds the metrics of one file. Empty tag values (the device of a named IRQ) are left
// out, as the line protocol leaves them out of Telegraf's output.
func (s *Interrupts) report(acc morse.Accumulator, measurement string, irqs []irq, now time.Time) {
	for _, q := range irqs {
		tags := make([]morse.Tag, 0, 4)
		for _, t := range []morse.Tag{{Key: "device", Value: q.device}, {Key: "irq", Value: q.id}, {Key: "type", Value: q.typ}} {
			if t.Value != "" {
				tags = append(tags, t)
			}
		}
		if s.CPUAsTag {
			for i, c := range q.cpus {
				ts := append(append(make([]morse.Tag, 0, len(tags)+1), morse.Tag{Key: "cpu", Value: cpuName(cpuTags, "cpu", i)}), tags...)
				acc.AddMetric(morse.NewMetric(measurement, ts, []morse.Field{{Key: "count", Value: morse.Int(c)}}, now))
			}
			continue
		}
		fields := make([]morse.Field, 0, len(q.cpus)+1)
		var total int64
		for i, c := range q.cpus {
			fields = append(fields, morse.Field{Key: cpuName(cpuNames, "CPU", i), Value: morse.Int(c)})
			total += c
		}
		fields = append(fields, morse.Field{Key: "total", Value: morse.Int(total)})
		acc.AddMetric(morse.NewMetric(measurement, tags, fields, now))
	}
}
