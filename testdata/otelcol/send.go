package main

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// send exports sample() once through the otlphttp exporter to url, without its queue and
// retries, so that the receiver's answer is the outcome.
func send(url, encoding string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory := otlphttpexporter.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlphttpexporter.Config)
	cfg.MetricsEndpoint = url
	cfg.Encoding = otlphttpexporter.EncodingType(encoding)
	cfg.RetryConfig.Enabled = false
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	set := exporter.Settings{ID: component.NewID(factory.Type()), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	exp, err := factory.CreateMetrics(ctx, set, cfg)
	if err != nil {
		return err
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		return err
	}
	return errors.Join(exp.ConsumeMetrics(ctx, sample()), exp.Shutdown(ctx))
}

// sampleTime is the time of every data point: 2023-11-14T22:13:20Z.
var sampleTime = pcommon.Timestamp(1_700_000_000_000_000_000)

// sample is a gauge with an exemplar, a monotonic cumulative sum and a histogram, of the
// resource service.name=otelcol-test and the scope morse.test 1.2.3.
func sample() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "otelcol-test")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("morse.test")
	sm.Scope().SetVersion("1.2.3")

	g := sm.Metrics().AppendEmpty()
	g.SetName("temperature")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetTimestamp(sampleTime)
	gp.SetDoubleValue(21.5)
	gp.Attributes().PutStr("room", "a")
	ex := gp.Exemplars().AppendEmpty()
	ex.SetTimestamp(sampleTime)
	ex.SetDoubleValue(0.5)
	ex.SetTraceID(pcommon.TraceID{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c})
	ex.SetSpanID(pcommon.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74})

	s := sm.Metrics().AppendEmpty()
	s.SetName("requests")
	sum := s.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	sp := sum.DataPoints().AppendEmpty()
	sp.SetTimestamp(sampleTime)
	sp.SetIntValue(5)
	sp.Attributes().PutStr("path", "/")

	h := sm.Metrics().AppendEmpty()
	h.SetName("latency")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := hist.DataPoints().AppendEmpty()
	hp.SetTimestamp(sampleTime)
	hp.SetCount(3)
	hp.SetSum(40)
	hp.ExplicitBounds().FromRaw([]float64{5, 10})
	hp.BucketCounts().FromRaw([]uint64{1, 1, 1})
	return md
}
