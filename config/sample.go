package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
)

// SampleConfig prints a complete config: [global_tags], an [agent] table holding every key at
// its default, then the sample of each output and each input in the registry (nil means
// morse.DefaultRegistry()), in name order. Non-empty filters keep only the named plugins, as
// `morse config --input-filter cpu:mem` does. The text loads unchanged with Load, so
// that it can be saved as a config and edited.
func SampleConfig(reg *morse.Registry, inputFilter, outputFilter []string) string {
	return sampleConfig(reg, pick{names: inputFilter}, pick{names: outputFilter})
}

// Telegraf's defaults of `telegraf config`: the inputs its sample enables. Telegraf 1.39.3
// enables no output (its outputDefaults is empty), so that its sample does not run as it
// is; morse enables outputs.influxdb, which writes to a local InfluxDB, so that it does.
var (
	SampleInputDefaults  = []string{"cpu", "disk", "diskio", "kernel", "mem", "processes", "swap", "system"}
	SampleOutputDefaults = []string{"influxdb"}
)

// DefaultSampleConfig is what `morse config` prints, as `telegraf config` does: where a
// filter is empty, the plugins of SampleInputDefaults or SampleOutputDefaults are enabled
// and the others printed commented out; a non-empty filter prints only the plugins it
// names, enabled.
func DefaultSampleConfig(reg *morse.Registry, inputFilter, outputFilter []string) string {
	in, out := pick{names: inputFilter}, pick{names: outputFilter}
	if len(inputFilter) == 0 {
		in = pick{names: SampleInputDefaults, commentRest: true}
	}
	if len(outputFilter) == 0 {
		out = pick{names: SampleOutputDefaults, commentRest: true}
	}
	return sampleConfig(reg, in, out)
}

// pick selects the plugins of a section: those named, or every one when none is, and
// whether the others are printed commented out.
type pick struct {
	names       []string
	commentRest bool
}

func (p pick) write(b *strings.Builder, kind string, names []string, info func(string) (string, string)) {
	for _, name := range names {
		desc, sample := info(name)
		switch {
		case len(p.names) == 0 || slices.Contains(p.names, name):
			writePluginSample(b, kind, name, desc, sample)
		case p.commentRest:
			writeCommented(b, kind, name, desc, sample)
		}
	}
}

func sampleConfig(reg *morse.Registry, inputs, outputs pick) string {
	if reg == nil {
		reg = morse.DefaultRegistry()
	}
	var b strings.Builder
	b.WriteString(sampleHeader)
	writeAgentSample(&b, DefaultAgentConfig())
	b.WriteString(sectionBanner("OUTPUT PLUGINS"))
	outputs.write(&b, "outputs", reg.OutputNames(), func(name string) (string, string) {
		info, _ := reg.Output(name)
		return info.Description, info.SampleConfig
	})
	// Processors and aggregators change what every output receives, so their samples are
	// printed commented out, as Telegraf prints them: a saved sample runs none of them until
	// its table is uncommented.
	b.WriteString(sectionBanner("PROCESSOR PLUGINS"))
	for _, name := range reg.ProcessorNames() {
		info, _ := reg.Processor(name)
		writeCommented(&b, "processors", name, info.Description, info.SampleConfig)
	}
	b.WriteString(sectionBanner("AGGREGATOR PLUGINS"))
	for _, name := range reg.AggregatorNames() {
		info, _ := reg.Aggregator(name)
		writeCommented(&b, "aggregators", name, info.Description, info.SampleConfig)
	}
	b.WriteString(sectionBanner("INPUT PLUGINS"))
	inputs.write(&b, "inputs", reg.InputNames(), func(name string) (string, string) {
		info, _ := reg.Input(name)
		return info.Description, info.SampleConfig
	})
	return b.String()
}

const sampleHeader = `# morse configuration
#
# Environment variables can be used in any value, as in Telegraf (not in keys or comments):
#   $VAR or ${VAR}    the value of VAR; kept as written, with a warning, when unset
#   ${VAR:-default}   default when VAR is unset or empty
#   ${VAR:?message}   refuse to start with message when VAR is unset or empty
#   $$                a literal $
# Durations are written "10s", sizes "32MiB". Unknown keys are errors.

# Tags added to every metric.
[global_tags]
  # dc = "us-east-1"
  # rack = "1a"
  # user = "${USER}"

`

// writeAgentSample writes the [agent] table with a's values, so that the sample always
// matches DefaultAgentConfig.
func writeAgentSample(b *strings.Builder, a AgentConfig) {
	b.WriteString("# Settings that every plugin inherits unless it overrides them.\n[agent]\n")
	item := func(comment, key string, value any) {
		fmt.Fprintf(b, "  ## %s\n  %s = ", comment, key)
		switch v := value.(type) {
		case string:
			fmt.Fprintf(b, "%q\n\n", v)
		case fmt.Stringer:
			fmt.Fprintf(b, "%q\n\n", v.String())
		default:
			fmt.Fprintf(b, "%v\n\n", v)
		}
	}
	item("How often inputs gather.", "interval", a.Interval)
	item("Align gathering to multiples of interval (:00, :10, ...).", "round_interval", a.RoundInterval)
	item("Delay each gather by a random time up to this, to spread load; smaller than interval.",
		"collection_jitter", a.CollectionJitter)
	item("Shift every gather by this much past its mark, to schedule inputs apart by hand.",
		"collection_offset", a.CollectionOffset)
	item("How often outputs write.", "flush_interval", a.FlushInterval)
	item("Each flush waits flush_interval ± a random time up to this; smaller than flush_interval.",
		"flush_jitter", a.FlushJitter)
	item("The most metrics in one write. A buffer holding this many flushes at once.",
		"metric_batch_size", a.MetricBatchSize)
	item("How many metrics each output holds while its sink is down; then the oldest are dropped.",
		"metric_buffer_limit", a.MetricBufferLimit)
	item("Round gathered timestamps to \"ns\", \"us\", \"ms\" or \"s\"; \"0s\": to the interval's unit, at most 1s.", "precision", a.Precision)
	item("Override the host tag; empty uses the system's hostname.", "hostname", a.Hostname)
	item("Leave the host tag out.", "omit_hostname", a.OmitHostname)
	item("On shutdown, how long to keep flushing what the buffers hold.", "shutdown_timeout", a.ShutdownTimeout)
	item("Log at debug level.", "debug", a.Debug)
	item("Log errors only.", "quiet", a.Quiet)
	item("Log to this file instead of stderr.", "logfile", a.Logfile)
	writeLogSample(item, a)
	item("Where each output's buffer lives: \"memory\", or \"disk\" to survive restarts and crashes.",
		"buffer_strategy", a.Strategy)
	item("With buffer_strategy = \"disk\": the directory that holds one directory per output.",
		"buffer_directory", a.Directory)
	item("Bytes a buffer may hold; past it the oldest metrics go (0: in memory, 3 KiB a metric of\n"+
		"  ## metric_buffer_limit and at least 32 MiB; on disk, no bound but metric_buffer_limit).",
		"buffer_max_bytes", a.MaxBytes)
	item("Bytes all memory buffers may hold together; past it the largest loses its oldest metrics\n"+
		"  ## (0: a quarter of the cgroup's memory limit, else of the host's memory).",
		"buffer_memory_limit", a.BufferMemoryLimit)
	item("Drop metrics that waited longer than this in a buffer (0s: never).", "buffer_max_age", a.MaxAge)
	item("How often the disk buffer is fsynced: an interval, or \"never\" to leave it to the kernel.",
		"buffer_disk_sync", string(a.DiskSync))
	item("After an outage write \"oldest_first\", or \"newest_first\" so the present shows at once.",
		"buffer_drain", a.Drain)
	high, low := a.WaterMarks()
	item("Backpressure: while an output keeps up with its sink and its buffer holds this share of\n"+
		"  ## metric_buffer_limit, the TCP, unix and HTTP listeners feeding it wait before taking more.",
		"buffer_high_water", high)
	item("... until the buffer is down to this share. A failing output never holds listeners back.",
		"buffer_low_water", low)
	item("An input's tags always pass its taginclude/tagexclude (morse adds them after the filter either way).",
		"always_include_local_tags", a.AlwaysIncludeLocalTags)
	item("The global tags always pass an input's taginclude/tagexclude (likewise).",
		"always_include_global_tags", a.AlwaysIncludeGlobalTags)
	item("Pass aggregators' summaries straight to the outputs, not through the processors again.",
		"skip_processors_after_aggregators", a.SkipProcessorsAfterAggregators)
}

func sectionBanner(title string) string {
	line := strings.Repeat("#", 78)
	return fmt.Sprintf("%s\n#%s#\n%s\n\n", line, center(title, 76), line)
}

func center(s string, width int) string {
	pad := max(width-len(s), 0)
	return strings.Repeat(" ", pad/2) + s + strings.Repeat(" ", pad-pad/2)
}

// writePluginSample writes one plugin's sample. Samples normally start with their own
// [[KIND.NAME]] header; one that does not gets a header, so that the text stays loadable.
func writePluginSample(b *strings.Builder, kind, name, description, sample string) {
	header := "[[" + kind + "." + name + "]]"
	if !hasHeader(sample, header) {
		if description != "" {
			fmt.Fprintf(b, "# %s\n", description)
		}
		b.WriteString(header + "\n")
	}
	if body := strings.TrimRight(sample, "\n"); body != "" {
		b.WriteString(body + "\n")
	}
	b.WriteString("\n")
}

// writeCommented writes a plugin's sample with every line commented out.
func writeCommented(b *strings.Builder, kind, name, description, sample string) {
	var one strings.Builder
	writePluginSample(&one, kind, name, description, sample)
	for line := range strings.Lines(strings.TrimRight(one.String(), "\n")) {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		} else {
			b.WriteString("# " + line)
		}
	}
	b.WriteString("\n\n")
}

// hasHeader reports whether an uncommented line of sample is header.
func hasHeader(sample, header string) bool {
	for line := range strings.Lines(sample) {
		line = strings.TrimSpace(line)
		if line == header || strings.HasPrefix(line, header+" ") || strings.HasPrefix(line, header+"#") {
			return true
		}
	}
	return false
}

// writeLogSample writes the log keys and the accepted keys that have no effect.
func writeLogSample(item func(comment, key string, value any), a AgentConfig) {
	item("Log format: \"text\" (Telegraf's lines), \"logfmt\" (key=value pairs) or \"structured\" (JSON).", "logformat", a.Format)
	item("With logformat = \"structured\": the key of the message, instead of \"msg\".",
		"structured_log_message_key", a.MessageKey)
	item("Time zone of logged times: a name such as \"America/Chicago\", \"local\", or empty for UTC.",
		"log_with_timezone", a.Timezone)
	item("Rotate logfile when it is this old (0s: never). Checked when the log is written to.",
		"logfile_rotation_interval", a.RotationInterval)
	item("Rotate logfile when it grows to this size (0: never).", "logfile_rotation_max_size", a.RotationMaxSize)
	item("How many rotated logfiles to keep, the oldest deleted first (-1: all).",
		"logfile_rotation_max_archives", a.RotationMaxArchives)
	item("Deprecated, as in Telegraf: \"stderr\" ignores logfile. Leave it empty.", "logtarget", a.Target)
	item("Accepted for Telegraf's configs; no effect: no morse plugin keeps state across restarts.",
		"statefile", a.Statefile)
	item("Accepted for Telegraf's configs; no effect: morse's SNMP plugins always translate with gosmi.", "snmp_translator", a.SnmpTranslator)
	item("Accepted for Telegraf's configs; no effect: configs are read from files only.",
		"config_url_retry_attempts", a.ConfigURLRetryAttempts)
}
