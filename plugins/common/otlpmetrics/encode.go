package otlpmetrics

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/morse-agent/morse"
)

// Encoder builds one OTLP export request from metrics, as influx2otel's MetricsBatch does:
// one ResourceMetrics per set of resource attributes, one ScopeMetrics per scope, one
// Metric per name, and the data points of the metrics added. It is not safe for concurrent
// use. The zero value is not ready: use NewEncoder.
type Encoder struct {
	res    map[string]*resEntry
	order  []*resEntry
	points int
}

type resEntry struct {
	rm     *metricspb.ResourceMetrics
	scopes map[string]*scopeEntry
}

type scopeEntry struct {
	sm      *metricspb.ScopeMetrics
	metrics map[string]*metricEntry
}

type metricEntry struct {
	m    *metricspb.Metric
	kind kind
	// hist finds the data point that a v2 line adds to, by time and attributes.
	hist map[string]*metricspb.HistogramDataPoint
}

// NewEncoder returns an empty encoder.
func NewEncoder() *Encoder { return &Encoder{res: map[string]*resEntry{}} }

// Reset empties the encoder for the next request.
func (e *Encoder) Reset() {
	clear(e.res)
	e.order = e.order[:0]
	e.points = 0
}

// DataPoints is how many data points the metrics added so far made, as an OTLP receiver
// counts them in a partial success.
func (e *Encoder) DataPoints() int { return e.points }

// errUnsupported is wrapped by the errors of metrics that have no OTLP form.
var errUnsupported = errors.New("no OTLP form")

// Add maps m into the request. On error nothing of m was added: m has no OTLP form (its
// fields do not make the shape its name and tags call for, or it has no numeric field),
// or its name is already a metric of another type in this request. Fields that are neither
// numbers nor part of a shape (strings, booleans) are left out, as Telegraf does.
func (e *Encoder) Add(m morse.Metric) error {
	t := splitTags(m.Tags())
	pieces, err := plan(m.Name(), t, m.Fields())
	if err != nil {
		return fmt.Errorf("%s: %w: %w", m.Name(), errUnsupported, err)
	}
	if len(pieces) == 0 {
		return fmt.Errorf("%s: %w: no numeric field", m.Name(), errUnsupported)
	}
	for _, p := range pieces {
		if err := e.check(t, p); err != nil {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
	}
	ts := uint64(m.Time().UnixNano())
	for _, p := range pieces {
		e.apply(t, p, ts)
	}
	return nil
}

// tagSplit is a metric's tags by what they become.
type tagSplit struct {
	resource     []*commonpb.KeyValue
	resKey       string
	scopeName    string
	scopeVersion string
	attrs        []*commonpb.KeyValue
	attrKey      string
	delta        bool
	le, quantile string
	hasLe, hasQ  bool
	timing       bool
}

func splitTags(tags []morse.Tag) *tagSplit {
	t := &tagSplit{}
	var rk, ak strings.Builder
	for _, tag := range tags {
		switch {
		case tag.Key == tagLe:
			t.le, t.hasLe = tag.Value, true
		case tag.Key == tagQuantile:
			t.quantile, t.hasQ = tag.Value, true
		case tag.Key == tagScopeName:
			t.scopeName = tag.Value
		case tag.Key == tagScopeVersion:
			t.scopeVersion = tag.Value
		case IsResourceAttribute(tag.Key):
			t.resource = append(t.resource, strAttr(tag.Key, tag.Value))
			writeKey(&rk, tag)
		case tag.Key == tagTemporality && tag.Value == "delta":
			t.delta = true
		case tag.Key == fieldStartTimeStatsd:
		default:
			if tag.Key == tagMetricType && tag.Value == "timing" {
				t.timing = true
			}
			t.attrs = append(t.attrs, strAttr(tag.Key, tag.Value))
			writeKey(&ak, tag)
		}
	}
	t.resKey, t.attrKey = rk.String(), ak.String()
	return t
}

// writeKey appends a tag to a map key; the lengths keep "a=b,c" apart from "a,b=c".
func writeKey(b *strings.Builder, tag morse.Tag) {
	fmt.Fprintf(b, "%d:%s%d:%s", len(tag.Key), tag.Key, len(tag.Value), tag.Value)
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// lookup finds the metric that p adds to, nil when the request has none yet.
func (e *Encoder) lookup(t *tagSplit, name string) *metricEntry {
	r := e.res[t.resKey]
	if r == nil {
		return nil
	}
	s := r.scopes[t.scopeName+":"+t.scopeVersion]
	if s == nil {
		return nil
	}
	return s.metrics[name]
}

// check refuses a piece whose metric exists with another type, as the library does.
func (e *Encoder) check(t *tagSplit, p piece) error {
	me := e.lookup(t, p.name)
	if me == nil || me.kind == p.kind {
		return nil
	}
	return fmt.Errorf("value type conflict for metric %q: it is a %s in this request, this one is a %s", p.name, me.kind, p.kind)
}

// metric finds or makes the metric of a piece.
func (e *Encoder) metric(t *tagSplit, p piece) *metricEntry {
	r := e.res[t.resKey]
	if r == nil {
		r = &resEntry{rm: &metricspb.ResourceMetrics{Resource: &resourcepb.Resource{Attributes: t.resource}},
			scopes: map[string]*scopeEntry{}}
		e.res[t.resKey] = r
		e.order = append(e.order, r)
	}
	sk := t.scopeName + ":" + t.scopeVersion
	s := r.scopes[sk]
	if s == nil {
		s = &scopeEntry{sm: &metricspb.ScopeMetrics{Scope: &commonpb.InstrumentationScope{Name: t.scopeName, Version: t.scopeVersion}},
			metrics: map[string]*metricEntry{}}
		r.scopes[sk] = s
		r.rm.ScopeMetrics = append(r.rm.ScopeMetrics, s.sm)
	}
	me := s.metrics[p.name]
	if me == nil {
		me = newMetric(p.name, p.kind, t.delta)
		s.metrics[p.name] = me
		s.sm.Metrics = append(s.sm.Metrics, me.m)
	}
	return me
}

func newMetric(name string, k kind, delta bool) *metricEntry {
	temporality := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if delta {
		temporality = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	me := &metricEntry{m: &metricspb.Metric{Name: name}, kind: k}
	switch k {
	case kindGauge:
		me.m.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}
	case kindSum:
		me.m.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, AggregationTemporality: temporality}}
	case kindHistogram:
		me.m.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: temporality}}
		me.hist = map[string]*metricspb.HistogramDataPoint{}
	}
	return me
}

// Request is the export request of everything added, with attrs put into every resource's
// attributes (Telegraf's attributes table: they replace a tag's attribute of the same key).
// Histograms get the bucket above their last bound here, as the library's GetMetrics does.
// The request shares memory with the encoder: send it before the next Reset.
func (e *Encoder) Request(attrs map[string]string) *colmetricspb.ExportMetricsServiceRequest {
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: make([]*metricspb.ResourceMetrics, 0, len(e.order))}
	for _, r := range e.order {
		for _, s := range r.rm.ScopeMetrics {
			for _, m := range s.Metrics {
				if h := m.GetHistogram(); h != nil {
					for _, dp := range h.DataPoints {
						closeBuckets(dp)
					}
				}
			}
		}
		r.rm.Resource.Attributes = withAttributes(r.rm.Resource.Attributes, attrs)
		req.ResourceMetrics = append(req.ResourceMetrics, r.rm)
	}
	return req
}

// closeBuckets drops a last bound of +Inf, or adds the count of the bucket above the last
// bound (what count leaves over, or count itself when the buckets add up to more, as an
// untyped summary read as a histogram may).
func closeBuckets(dp *metricspb.HistogramDataPoint) {
	n := len(dp.ExplicitBounds)
	switch {
	case n > 0 && math.IsInf(dp.ExplicitBounds[n-1], +1):
		dp.ExplicitBounds = dp.ExplicitBounds[:n-1]
	case len(dp.BucketCounts) == n:
		rest := dp.Count
		for _, c := range dp.BucketCounts {
			rest -= c
		}
		if rest > dp.Count { // wrapped below zero
			rest = dp.Count
		}
		dp.BucketCounts = append(dp.BucketCounts, rest)
	}
}

func withAttributes(have []*commonpb.KeyValue, attrs map[string]string) []*commonpb.KeyValue {
	for k, v := range attrs {
		replaced := false
		for i, kv := range have {
			if kv.Key == k {
				have[i] = strAttr(k, v)
				replaced = true
			}
		}
		if !replaced {
			have = append(have, strAttr(k, v))
		}
	}
	return have
}

// startTime is the start of a v1 data point: the statsd input's RFC 3339 start_time field.
func startTime(fields []morse.Field) uint64 {
	for _, f := range fields {
		if f.Key == fieldStartTimeStatsd && f.Value.Type() == morse.TypeString {
			if t, err := time.Parse(time.RFC3339, f.Value.Str()); err == nil {
				return uint64(t.UnixNano())
			}
		}
	}
	return 0
}
