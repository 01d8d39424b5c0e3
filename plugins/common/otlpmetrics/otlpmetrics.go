// Package otlpmetrics maps morse metrics to OTLP metrics and back, as Telegraf 1.39.3 does
// through InfluxData's influxdb-observability library (influx2otel for its
// outputs.opentelemetry, otel2influx for its inputs.opentelemetry), so that a metric takes
// the same shape through morse as through Telegraf. Encoder is the direction of the output,
// Decode the direction of the input.
//
// The two line-protocol shapes of Telegraf's Prometheus plugins are known, as the library's
// schemas "prometheus-v1" and "prometheus-v2" (metric_version 1 and 2): under v1 a metric is
// one measurement named after the OTLP metric, with a field "gauge" or "counter", or "count",
// "sum" and one field per bucket bound or quantile; under v2 every metric is the measurement
// "prometheus" with one field named after the OTLP metric (name_count, name_sum, name_bucket
// with an "le" tag, name with a "quantile" tag).
//
// Tags whose keys are OpenTelemetry resource attributes (semantic conventions 1.16.0:
// service.name, host.name, k8s.pod.name ... and any key under one of them) become resource
// attributes, otel.library.name and otel.library.version the instrumentation scope, and the
// other tags the data points' attributes. Decode gives a data point's resource and scope
// attributes back as tags.
//
// morse metrics carry no value type (Telegraf's Gauge, Counter, Histogram, Summary): every
// metric is what Telegraf calls untyped, whose type the library infers from its field
// names and tags. That is where morse and Telegraf can differ: see docs/telegraf-compat.md.
package otlpmetrics

import (
	"fmt"
	"regexp"
	"strings"
)

// Schema is the line-protocol shape of metrics: Telegraf's metrics_schema.
type Schema uint8

// The schemas of Telegraf's metrics_schema option.
const (
	// PrometheusV1 is "prometheus-v1", Telegraf's default: metric_version 1 of its
	// Prometheus plugins.
	PrometheusV1 Schema = iota + 1
	// PrometheusV2 is "prometheus-v2": metric_version 2, the measurement "prometheus".
	PrometheusV2
)

// ParseSchema reads Telegraf's name of a schema; "" is PrometheusV1.
func ParseSchema(s string) (Schema, error) {
	switch s {
	case "", "prometheus-v1":
		return PrometheusV1, nil
	case "prometheus-v2":
		return PrometheusV2, nil
	}
	return 0, fmt.Errorf(`unknown metrics schema %q: want "prometheus-v1" or "prometheus-v2"`, s)
}

// Names of the shapes, as the library spells them.
const (
	measurementPrometheus = "prometheus"
	fieldGauge            = "gauge"
	fieldCounter          = "counter"
	fieldCount            = "count"
	fieldSum              = "sum"
	fieldMin              = "min"
	fieldMax              = "max"
	fieldInf              = "+Inf"
	tagLe                 = "le"
	tagQuantile           = "quantile"
	suffixCount           = "_count"
	suffixSum             = "_sum"
	suffixBucket          = "_bucket"
	suffixMin             = "_min"
	suffixMax             = "_max"
	suffixExemplar        = "_exemplar"
	fieldStartTime        = "start_time_unix_nano"
	fieldStartTimeStatsd  = "start_time" // RFC 3339, as Telegraf's statsd input writes it
	tagScopeName          = "otel.library.name"
	tagScopeVersion       = "otel.library.version"
	tagTraceID            = "trace_id"
	tagSpanID             = "span_id"
	tagTemporality        = "temporality"
	tagMetricType         = "metric_type"
)

// resourceAttributes are the resource attributes of OpenTelemetry's semantic conventions
// 1.16.0, which the library reads from the collector's semconv package: a tag whose key is
// one of them, or one of them followed by dot-separated lower-case words, is a resource
// attribute.
var resourceAttributes = strings.Fields(`browser.brands browser.platform browser.mobile
browser.user_agent browser.language cloud.provider cloud.account.id cloud.region
cloud.availability_zone cloud.platform aws.ecs.container.arn aws.ecs.cluster.arn
aws.ecs.launchtype aws.ecs.task.arn aws.ecs.task.family aws.ecs.task.revision
aws.eks.cluster.arn aws.log.group.names aws.log.group.arns aws.log.stream.names
aws.log.stream.arns container.name container.id container.runtime container.image.name
container.image.tag deployment.environment device.id device.model.identifier
device.model.name device.manufacturer faas.name faas.id faas.version faas.instance
faas.max_memory host.id host.name host.type host.arch host.image.name host.image.id
host.image.version k8s.cluster.name k8s.node.name k8s.node.uid k8s.namespace.name
k8s.pod.uid k8s.pod.name k8s.container.name k8s.container.restart_count k8s.replicaset.uid
k8s.replicaset.name k8s.deployment.uid k8s.deployment.name k8s.statefulset.uid
k8s.statefulset.name k8s.daemonset.uid k8s.daemonset.name k8s.job.uid k8s.job.name
k8s.cronjob.uid k8s.cronjob.name os.type os.description os.name os.version process.pid
process.parent_pid process.executable.name process.executable.path process.command
process.command_line process.command_args process.owner process.runtime.name
process.runtime.version process.runtime.description service.name service.namespace
service.instance.id service.version telemetry.sdk.name telemetry.sdk.language
telemetry.sdk.version telemetry.auto.version webengine.name webengine.version
webengine.description otel.scope.name otel.scope.version otel.library.name
otel.library.version`)

var resourceKey = func() *regexp.Regexp {
	quoted := make([]string, len(resourceAttributes))
	for i, a := range resourceAttributes {
		quoted[i] = regexp.QuoteMeta(a)
	}
	return regexp.MustCompile(`^(?:` + strings.Join(quoted, "|") + `)(?:\.[a-z0-9]+)*$`)
}()

// IsResourceAttribute reports whether a tag of this key becomes a resource attribute.
func IsResourceAttribute(key string) bool { return resourceKey.MatchString(key) }
