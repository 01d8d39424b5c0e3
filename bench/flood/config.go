package flood

import (
	"fmt"
	"strings"
)

// agentConfig is what one scenario's morse config needs.
type agentConfig struct {
	Input    string // "statsd" or "syslog"
	Protocol string // "udp" or "tcp"
	Listen   string // its service_address, 127.0.0.1:PORT
	OutFile  string // where outputs.file writes every metric, the agent's own counters included
}

// render writes the config. A statsd input is Telegraf's sample inputs.statsd (10,000 pending
// messages, 5 workers, the sample's percentiles, counters cleared after every gather, which
// the count relies on); the agent gathers and flushes every second, with a buffer that holds
// many gathers of the flood's 50,000 series so that the output never evicts what the
// harness counts (internal_write's metrics_dropped says if it did); inputs.internal reports
// the input's own drops to the same file. A syslog input takes octet-counted frames, its
// default.
func (c agentConfig) render() string {
	var b strings.Builder
	b.WriteString(`# Written by morse-bench flood for one scenario.
[agent]
  interval = "1s"
  flush_interval = "1s"
  flush_jitter = "0s"
  collection_jitter = "0s"
  metric_batch_size = 10000
  metric_buffer_limit = 1000000
  omit_hostname = true

`)
	if c.Input == "syslog" {
		fmt.Fprintf(&b, "[[inputs.syslog]]\n  server = %q\n  framing = \"octet-counting\"\n", c.Protocol+"://"+c.Listen)
	} else {
		fmt.Fprintf(&b, `[[inputs.statsd]]
  protocol = %q
  service_address = %q
  delete_counters = true
  delete_gauges = true
  delete_sets = true
  delete_timings = true
  allowed_pending_messages = 10000
  number_workers_threads = 5
  percentiles = [50.0, 90.0, 99.0, 99.9, 99.95, 100.0]
  metric_separator = "_"
`, c.Protocol, c.Listen)
	}
	fmt.Fprintf(&b, `
[[inputs.internal]]
  collect_memstats = false

[[outputs.file]]
  files = [%q]
  data_format = "influx"
`, c.OutFile)
	return b.String()
}
