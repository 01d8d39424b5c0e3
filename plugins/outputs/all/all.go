// Package all registers every output plugin.
package all

import (
	_ "github.com/morse-agent/morse/plugins/outputs/file"     // registers outputs.file
	_ "github.com/morse-agent/morse/plugins/outputs/influxdb" // registers outputs.influxdb
	_ "github.com/morse-agent/morse/plugins/outputs/kafka"    // registers outputs.kafka
)
