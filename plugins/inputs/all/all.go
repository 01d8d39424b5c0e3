// Package all registers every input plugin. It lives under plugins/inputs so that it may
// import plugins/inputs/internal, which Go's internal-package rule hides from the rest of the
// module.
package all

import (
	_ "github.com/morse-agent/morse/plugins/inputs/conntrack"         // registers inputs.conntrack
	_ "github.com/morse-agent/morse/plugins/inputs/cpu"               // registers inputs.cpu
	_ "github.com/morse-agent/morse/plugins/inputs/disk"              // registers inputs.disk
	_ "github.com/morse-agent/morse/plugins/inputs/diskio"            // registers inputs.diskio
	_ "github.com/morse-agent/morse/plugins/inputs/dns_query"         // registers inputs.dns_query
	_ "github.com/morse-agent/morse/plugins/inputs/docker"            // registers inputs.docker
	_ "github.com/morse-agent/morse/plugins/inputs/exec"              // registers inputs.exec
	_ "github.com/morse-agent/morse/plugins/inputs/file"              // registers inputs.file
	_ "github.com/morse-agent/morse/plugins/inputs/http"              // registers inputs.http
	_ "github.com/morse-agent/morse/plugins/inputs/http_response"     // registers inputs.http_response
	_ "github.com/morse-agent/morse/plugins/inputs/influxdb"          // registers inputs.influxdb
	_ "github.com/morse-agent/morse/plugins/inputs/influxdb_listener" // registers inputs.influxdb_listener
	_ "github.com/morse-agent/morse/plugins/inputs/internal"          // registers inputs.internal
	_ "github.com/morse-agent/morse/plugins/inputs/interrupts"        // registers inputs.interrupts
	_ "github.com/morse-agent/morse/plugins/inputs/kafka_consumer"    // registers inputs.kafka_consumer
	_ "github.com/morse-agent/morse/plugins/inputs/kernel"            // registers inputs.kernel
	_ "github.com/morse-agent/morse/plugins/inputs/linux_sysctl_fs"   // registers inputs.linux_sysctl_fs
	_ "github.com/morse-agent/morse/plugins/inputs/mem"               // registers inputs.mem
	_ "github.com/morse-agent/morse/plugins/inputs/modbus"            // registers inputs.modbus
	_ "github.com/morse-agent/morse/plugins/inputs/mqtt_consumer"     // registers inputs.mqtt_consumer
	_ "github.com/morse-agent/morse/plugins/inputs/mysql"             // registers inputs.mysql
	_ "github.com/morse-agent/morse/plugins/inputs/net"               // registers inputs.net
	_ "github.com/morse-agent/morse/plugins/inputs/net_response"      // registers inputs.net_response
	_ "github.com/morse-agent/morse/plugins/inputs/netstat"           // registers inputs.netstat
	_ "github.com/morse-agent/morse/plugins/inputs/nfsclient"         // registers inputs.nfsclient
	_ "github.com/morse-agent/morse/plugins/inputs/nginx"             // registers inputs.nginx
	_ "github.com/morse-agent/morse/plugins/inputs/nstat"             // registers inputs.nstat
	_ "github.com/morse-agent/morse/plugins/inputs/opentelemetry"     // registers inputs.opentelemetry
	_ "github.com/morse-agent/morse/plugins/inputs/phpfpm"            // registers inputs.phpfpm
	_ "github.com/morse-agent/morse/plugins/inputs/ping"              // registers inputs.ping
	_ "github.com/morse-agent/morse/plugins/inputs/postgresql"        // registers inputs.postgresql
	_ "github.com/morse-agent/morse/plugins/inputs/processes"         // registers inputs.processes
	_ "github.com/morse-agent/morse/plugins/inputs/procstat"          // registers inputs.procstat
	_ "github.com/morse-agent/morse/plugins/inputs/prometheus"        // registers inputs.prometheus
	_ "github.com/morse-agent/morse/plugins/inputs/redis"             // registers inputs.redis
	_ "github.com/morse-agent/morse/plugins/inputs/sensors"           // registers inputs.sensors
	_ "github.com/morse-agent/morse/plugins/inputs/snmp"              // registers inputs.snmp
	_ "github.com/morse-agent/morse/plugins/inputs/snmp_trap"         // registers inputs.snmp_trap
	_ "github.com/morse-agent/morse/plugins/inputs/socket_listener"   // registers inputs.socket_listener
	_ "github.com/morse-agent/morse/plugins/inputs/statsd"            // registers inputs.statsd
	_ "github.com/morse-agent/morse/plugins/inputs/swap"              // registers inputs.swap
	_ "github.com/morse-agent/morse/plugins/inputs/syslog"            // registers inputs.syslog
	_ "github.com/morse-agent/morse/plugins/inputs/system"            // registers inputs.system
	_ "github.com/morse-agent/morse/plugins/inputs/systemd_units"     // registers inputs.systemd_units
	_ "github.com/morse-agent/morse/plugins/inputs/tail"              // registers inputs.tail
	_ "github.com/morse-agent/morse/plugins/inputs/temp"              // registers inputs.temp
)
