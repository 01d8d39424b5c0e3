package prometheus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/morse-agent/morse"
	promparser "github.com/morse-agent/morse/plugins/parsers/prometheus"
)

// decodeProtobuf reads delimited MetricFamily messages, as exporters serve them to a
// scraper that prefers protobuf, and emits their metrics through the parser's Mapping, so
// that both formats give the same metrics.
func (p *Prometheus) decodeProtobuf(body []byte, emit func(morse.Metric)) error {
	r := bufio.NewReader(bytes.NewReader(body))
	now := p.now()
	opts := protodelim.UnmarshalOptions{MaxSize: -1}
	for {
		var mf dto.MetricFamily
		if err := opts.UnmarshalFrom(r, &mf); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading protobuf: %w", err)
		}
		if mf.GetName() == "" {
			return errNoFamily
		}
		f := family(&mf)
		p.mapping.Metrics(f, now, emit)
	}
}

// family converts one MetricFamily into the parser's Family.
func family(mf *dto.MetricFamily) *promparser.Family {
	f := &promparser.Family{Name: mf.GetName(), Samples: make([]promparser.Sample, 0, len(mf.Metric))}
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		f.Type = promparser.Counter
	case dto.MetricType_GAUGE:
		f.Type = promparser.Gauge
	case dto.MetricType_SUMMARY:
		f.Type = promparser.Summary
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		f.Type = promparser.Histogram
	}
	for _, m := range mf.Metric {
		s := promparser.Sample{TimestampMs: m.GetTimestampMs()}
		for _, l := range m.Label {
			s.Labels = append(s.Labels, morse.Tag{Key: l.GetName(), Value: l.GetValue()})
		}
		switch f.Type {
		case promparser.Counter:
			s.Value = m.GetCounter().GetValue()
		case promparser.Gauge:
			s.Value = m.GetGauge().GetValue()
		case promparser.Summary:
			sm := m.GetSummary()
			s.Count, s.Sum = float64(sm.GetSampleCount()), sm.GetSampleSum()
			for _, q := range sm.Quantile {
				s.Quantiles = append(s.Quantiles, promparser.Quantile{Quantile: q.GetQuantile(), Value: q.GetValue()})
			}
		case promparser.Histogram:
			h := m.GetHistogram()
			s.Count, s.Sum = histCount(h), h.GetSampleSum()
			for _, b := range h.Bucket {
				c := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					c = b.GetCumulativeCountFloat()
				}
				s.Buckets = append(s.Buckets, promparser.Bucket{UpperBound: b.GetUpperBound(), Count: c})
			}
		default:
			s.Value = m.GetUntyped().GetValue()
		}
		f.Samples = append(f.Samples, s)
	}
	return f
}

// histCount is a histogram's count, integer or float.
func histCount(h *dto.Histogram) float64 {
	if h.SampleCountFloat != nil {
		return h.GetSampleCountFloat()
	}
	return float64(h.GetSampleCount())
}
