package otlpmetrics

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/morse-agent/morse"
)

// Decode maps the data points of an export request to metrics in schema s, as otel2influx
// does, and hands each to emit. It returns how many data points it refused, with the first
// reason: a data point without a time, a histogram whose bucket counts do not match its
// bounds, and every point of an exponential histogram, which neither schema has a shape
// for. Telegraf refuses the whole request for any of these; Decode refuses only those
// points, so that an OTLP client hears of them in a partial success.
func Decode(req *colmetricspb.ExportMetricsServiceRequest, s Schema, emit func(morse.Metric)) (rejected int, err error) {
	d := decoder{schema: s, emit: emit}
	for _, rm := range req.GetResourceMetrics() {
		base := map[string]string{}
		putAttrs(base, rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			tags := maps.Clone(base)
			if sc := sm.GetScope(); sc != nil {
				if sc.Name != "" {
					tags[tagScopeName] = sc.Name
				}
				if sc.Version != "" {
					tags[tagScopeVersion] = sc.Version
				}
				putAttrs(tags, sc.Attributes)
			}
			for _, m := range sm.GetMetrics() {
				d.metric(tags, m)
			}
		}
	}
	return d.rejected, d.err
}

type decoder struct {
	schema   Schema
	emit     func(morse.Metric)
	rejected int
	err      error
}

func (d *decoder) refuse(n int, err error) {
	d.rejected += n
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) metric(tags map[string]string, m *metricspb.Metric) {
	name := m.GetName()
	switch data := m.GetData().(type) {
	case *metricspb.Metric_Gauge:
		d.numbers(tags, name, fieldGauge, data.Gauge.GetDataPoints())
	case *metricspb.Metric_Sum:
		key := fieldGauge
		if data.Sum.GetIsMonotonic() && data.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
			key = fieldCounter
		}
		d.numbers(tags, name, key, data.Sum.GetDataPoints())
	case *metricspb.Metric_Histogram:
		for _, dp := range data.Histogram.GetDataPoints() {
			d.histogram(tags, name, dp)
		}
	case *metricspb.Metric_Summary:
		for _, dp := range data.Summary.GetDataPoints() {
			d.summary(tags, name, dp)
		}
	case *metricspb.Metric_ExponentialHistogram:
		d.refuse(len(data.ExponentialHistogram.GetDataPoints()),
			fmt.Errorf("%s: exponential histograms are not supported", name))
	case nil: // an empty metric, as the library skips it
	default:
		d.refuse(0, fmt.Errorf("%s: unknown metric type %T", name, data))
	}
}

// point starts the tags and fields of a data point; ok is false for one without a time.
func (d *decoder) point(base map[string]string, name string, ts, start uint64, attrs []*commonpb.KeyValue) (map[string]string, map[string]any, bool) {
	if ts == 0 {
		d.refuse(1, fmt.Errorf("%s: metric has no timestamp", name))
		return nil, nil, false
	}
	fields := map[string]any{}
	if start != 0 {
		fields[fieldStartTime] = int64(start)
	}
	tags := maps.Clone(base)
	putAttrs(tags, attrs)
	return tags, fields, true
}

func (d *decoder) add(name string, tags map[string]string, fields map[string]any, ts uint64) {
	m, _ := morse.NewMetricFromMaps(name, tags, fields, time.Unix(0, int64(ts)))
	d.emit(m)
}

// numbers maps gauge and sum points: the field key under v1 ("gauge" or "counter"), the
// metric's name under v2.
func (d *decoder) numbers(base map[string]string, name, key string, dps []*metricspb.NumberDataPoint) {
	for _, dp := range dps {
		tags, fields, ok := d.point(base, name, dp.TimeUnixNano, dp.StartTimeUnixNano, dp.Attributes)
		if !ok {
			continue
		}
		var v any
		switch val := dp.Value.(type) {
		case *metricspb.NumberDataPoint_AsDouble:
			v = val.AsDouble
		case *metricspb.NumberDataPoint_AsInt:
			v = val.AsInt
		default:
			continue // no value, as the library skips it
		}
		measurement := name
		if d.schema == PrometheusV2 {
			measurement, key = measurementPrometheus, name
		}
		fields[key] = v
		d.add(measurement, tags, fields, dp.TimeUnixNano)
		d.exemplars(name, dp.Exemplars)
	}
}

func (d *decoder) histogram(base map[string]string, name string, dp *metricspb.HistogramDataPoint) {
	counts, bounds := dp.BucketCounts, dp.ExplicitBounds
	if len(counts) > 0 && len(counts) != len(bounds) && len(counts) != len(bounds)+1 {
		d.refuse(1, fmt.Errorf("%s: invalid metric histogram bucket counts qty %d vs explicit bounds qty %d", name, len(counts), len(bounds)))
		return
	}
	tags, fields, ok := d.point(base, name, dp.TimeUnixNano, dp.StartTimeUnixNano, dp.Attributes)
	if !ok {
		return
	}
	prefix, keyCount, keySum, keyMin, keyMax := name, fieldCount, fieldSum, fieldMin, fieldMax
	if d.schema == PrometheusV2 {
		prefix = measurementPrometheus
		keyCount, keySum, keyMin, keyMax = name+suffixCount, name+suffixSum, name+suffixMin, name+suffixMax
	}
	fields[keyCount] = float64(dp.Count)
	if dp.Sum != nil {
		fields[keySum] = *dp.Sum
	}
	if dp.Min != nil {
		fields[keyMin] = *dp.Min
	}
	if dp.Max != nil {
		fields[keyMax] = *dp.Max
	}
	var cumulative uint64
	var lines []map[string]string // v2: the bucket lines' tags, each with its le
	var values []float64
	for i, c := range counts {
		cumulative += c
		bound := fieldInf
		if i < len(bounds) {
			bound = strconv.FormatFloat(bounds[i], 'f', -1, 64)
		}
		if d.schema == PrometheusV2 {
			bt := maps.Clone(tags)
			bt[tagLe] = bound
			lines, values = append(lines, bt), append(values, float64(cumulative))
			continue
		}
		fields[bound] = float64(cumulative)
	}
	d.add(prefix, tags, fields, dp.TimeUnixNano) // then the bucket lines, as the library
	for i, bt := range lines {
		d.add(prefix, bt, map[string]any{name + suffixBucket: values[i]}, dp.TimeUnixNano)
	}
	d.exemplars(name, dp.Exemplars)
}

func (d *decoder) summary(base map[string]string, name string, dp *metricspb.SummaryDataPoint) {
	tags, fields, ok := d.point(base, name, dp.TimeUnixNano, dp.StartTimeUnixNano, dp.Attributes)
	if !ok {
		return
	}
	if d.schema == PrometheusV2 {
		fields[name+suffixCount] = float64(dp.Count)
		fields[name+suffixSum] = dp.Sum
		d.add(measurementPrometheus, tags, fields, dp.TimeUnixNano)
		for _, q := range dp.QuantileValues {
			qt := maps.Clone(tags)
			qt[tagQuantile] = strconv.FormatFloat(q.Quantile, 'f', -1, 64)
			d.add(measurementPrometheus, qt, map[string]any{name: q.Value}, dp.TimeUnixNano)
		}
		return
	}
	fields[fieldCount] = float64(dp.Count)
	fields[fieldSum] = dp.Sum
	for _, q := range dp.QuantileValues {
		fields[strconv.FormatFloat(q.Quantile, 'f', -1, 64)] = q.Value
	}
	d.add(name, tags, fields, dp.TimeUnixNano)
}

// exemplars maps the exemplars that name a trace and a span to points of the measurement
// name_exemplar.
func (d *decoder) exemplars(name string, exs []*metricspb.Exemplar) {
	for _, ex := range exs {
		var v any
		switch val := ex.Value.(type) {
		case *metricspb.Exemplar_AsDouble:
			v = val.AsDouble
		case *metricspb.Exemplar_AsInt:
			v = val.AsInt
		default:
			continue
		}
		if !nonZero(ex.TraceId) || !nonZero(ex.SpanId) {
			continue
		}
		tags := map[string]string{}
		putAttrs(tags, ex.FilteredAttributes)
		tags[tagTraceID] = hex.EncodeToString(ex.TraceId)
		tags[tagSpanID] = hex.EncodeToString(ex.SpanId)
		d.add(name+suffixExemplar, tags, map[string]any{fieldGauge: v}, ex.TimeUnixNano)
	}
}

func nonZero(id []byte) bool {
	for _, b := range id {
		if b != 0 {
			return true
		}
	}
	return false
}

// putAttrs sets the attributes as tags, their values as text, as pdata's AsString writes
// them.
func putAttrs(tags map[string]string, attrs []*commonpb.KeyValue) {
	for _, kv := range attrs {
		if kv.GetKey() != "" {
			tags[kv.Key] = valueString(kv.GetValue())
		}
	}
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'f', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case nil:
		return ""
	}
	b, err := json.Marshal(raw(v))
	if err != nil {
		return ""
	}
	return string(b)
}

// raw is an array or map value as Go values, for its JSON text.
func raw(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, raw(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = raw(kv.GetValue())
		}
		return out
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	}
	return nil
}
