// Package all registers every output plugin.
package all

import (
	_ "github.com/morse-agent/morse/plugins/outputs/file"              // registers outputs.file
	_ "github.com/morse-agent/morse/plugins/outputs/health"            // registers outputs.health
	_ "github.com/morse-agent/morse/plugins/outputs/http"              // registers outputs.http
	_ "github.com/morse-agent/morse/plugins/outputs/influxdb"          // registers outputs.influxdb
	_ "github.com/morse-agent/morse/plugins/outputs/influxdb_v2"       // registers outputs.influxdb_v2
	_ "github.com/morse-agent/morse/plugins/outputs/iotdb"             // registers outputs.iotdb
	_ "github.com/morse-agent/morse/plugins/outputs/kafka"             // registers outputs.kafka
	_ "github.com/morse-agent/morse/plugins/outputs/mqtt"              // registers outputs.mqtt
	_ "github.com/morse-agent/morse/plugins/outputs/opentelemetry"     // registers outputs.opentelemetry
	_ "github.com/morse-agent/morse/plugins/outputs/prometheus_client" // registers outputs.prometheus_client
	_ "github.com/morse-agent/morse/plugins/outputs/questdb"           // registers outputs.questdb
	_ "github.com/morse-agent/morse/plugins/outputs/socket_writer"     // registers outputs.socket_writer
)
