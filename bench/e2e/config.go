package e2e

import (
	"fmt"
	"strings"
)

// agentConfig is what one scenario's morse config needs.
type agentConfig struct {
	Input  string // "influxdb_listener" or "socket_listener"
	Listen string // the input's service_address
	// ReadBufferSize is the input's read_buffer_size; empty leaves it out.
	ReadBufferSize string
	SinkAddr       string // host:port of the sink
	InternalFile   string // where inputs.internal's counters go; empty leaves them out
	BufferDir      string // the disk buffer's directory; empty keeps the memory buffer
	// IoTDBURL, when set, replaces the InfluxDB output by outputs.iotdb writing to this
	// IoTDB's REST service, under IoTDBDatabase.
	IoTDBURL, IoTDBDatabase string
	IoTDBTagsAs             string // convert_tags_to; empty keeps device_id
}

// render writes the config: the one listener, the InfluxDB output to the sink (or the IoTDB
// output to IoTDB) with the defaults the targets are stated for (batch 1000, buffer 10000,
// flush every 1s), and,
// when asked, the agent's own counters to a file of their own so that they do not reach
// the sink and skew its count.
func (c agentConfig) render() string {
	var b strings.Builder
	b.WriteString(`# Written by morse-bench e2e for one benchmark scenario.
[agent]
  interval = "10s"
  flush_interval = "1s"
  flush_jitter = "0s"
  metric_batch_size = 1000
  metric_buffer_limit = 10000
  omit_hostname = true

`)
	fmt.Fprintf(&b, "[[inputs.%s]]\n  service_address = %q\n", c.Input, c.Listen)
	if c.ReadBufferSize != "" {
		fmt.Fprintf(&b, "  read_buffer_size = %q\n", c.ReadBufferSize)
	}
	b.WriteString("\n")
	if c.IoTDBURL != "" {
		// The test server keeps times in milliseconds; tag values with spaces, commas and
		// the like are quoted as path levels.
		fmt.Fprintf(&b, `[[outputs.iotdb]]
  namedrop = ["internal*"]
  url = %q
  database = %q
  timestamp_precision = "millisecond"
  sanitize_tag = "1.3"
`, c.IoTDBURL, c.IoTDBDatabase)
		if c.IoTDBTagsAs != "" {
			fmt.Fprintf(&b, "  convert_tags_to = %q\n", c.IoTDBTagsAs)
		}
	} else {
		fmt.Fprintf(&b, `[[outputs.influxdb]]
  namedrop = ["internal*"]
  urls = [%q]
  database = "bench"
  skip_database_creation = true
`, "http://"+c.SinkAddr)
	}
	if c.BufferDir != "" {
		fmt.Fprintf(&b, "  buffer_strategy = \"disk\"\n  buffer_directory = %q\n", c.BufferDir)
	}
	if c.InternalFile != "" {
		fmt.Fprintf(&b, `
[[inputs.internal]]
  interval = "1s"
  collect_memstats = false

[[outputs.file]]
  namepass = ["internal*"]
  files = [%q]
`, c.InternalFile)
	}
	return b.String()
}
