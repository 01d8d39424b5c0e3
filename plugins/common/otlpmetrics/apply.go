package otlpmetrics

import (
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// apply adds a checked piece to its metric.
func (e *Encoder) apply(t *tagSplit, p piece, ts uint64) {
	me := e.metric(t, p)
	switch p.kind {
	case kindGauge:
		g := me.m.GetGauge()
		g.DataPoints = append(g.DataPoints, numberPoint(t.attrs, ts, p))
		e.points++
	case kindSum:
		s := me.m.GetSum()
		s.DataPoints = append(s.DataPoints, numberPoint(t.attrs, ts, p))
		e.points++
	case kindHistogram:
		if p.v2 {
			e.addV2(me, t, p, ts)
			return
		}
		h := me.m.GetHistogram()
		sum := p.sum
		h.DataPoints = append(h.DataPoints, &metricspb.HistogramDataPoint{Attributes: t.attrs,
			StartTimeUnixNano: p.start, TimeUnixNano: ts, Count: p.count, Sum: &sum,
			ExplicitBounds: p.bounds, BucketCounts: p.counts})
		e.points++
	}
}

func numberPoint(attrs []*commonpb.KeyValue, ts uint64, p piece) *metricspb.NumberDataPoint {
	dp := &metricspb.NumberDataPoint{Attributes: attrs, StartTimeUnixNano: p.start, TimeUnixNano: ts}
	if p.num.isInt {
		dp.Value = &metricspb.NumberDataPoint_AsInt{AsInt: p.num.i}
	} else {
		dp.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: p.num.f}
	}
	return dp
}

// addV2 adds a v2 line to the data point of its time and attributes.
func (e *Encoder) addV2(me *metricEntry, t *tagSplit, p piece, ts uint64) {
	key := strconv.FormatUint(ts, 10) + ":" + t.attrKey
	dp := me.hist[key]
	if dp == nil {
		dp = &metricspb.HistogramDataPoint{Attributes: t.attrs, TimeUnixNano: ts}
		me.hist[key] = dp
		h := me.m.GetHistogram()
		h.DataPoints = append(h.DataPoints, dp)
		e.points++
	}
	switch {
	case p.hasBound && p.insert:
		insertBucket(dp, p.bound, p.bucket)
	case p.hasBound:
		dp.ExplicitBounds = append(dp.ExplicitBounds, p.bound)
		dp.BucketCounts = append(dp.BucketCounts, p.bucket)
	}
	if p.hasCS {
		sum := p.sum
		dp.Count, dp.Sum = p.count, &sum
	}
}

// insertBucket is the library's addCountToHistogramV2: bucket is the cumulative count up to
// bound, made the count of its own bucket by taking off the buckets below it, and taken
// off the bucket above it. Counts that do not add up wrap around, as the library's do.
func insertBucket(dp *metricspb.HistogramDataPoint, bound float64, bucket uint64) {
	at := 0
	for at < len(dp.BucketCounts) && bound > dp.ExplicitBounds[at] {
		at++
	}
	for i := 0; i < at; i++ {
		bucket -= dp.BucketCounts[i]
	}
	if len(dp.BucketCounts) > at {
		dp.BucketCounts[at] -= bucket
	}
	dp.BucketCounts = append(dp.BucketCounts, 0)
	dp.ExplicitBounds = append(dp.ExplicitBounds, 0)
	copy(dp.BucketCounts[at+1:], dp.BucketCounts[at:])
	copy(dp.ExplicitBounds[at+1:], dp.ExplicitBounds[at:])
	dp.BucketCounts[at], dp.ExplicitBounds[at] = bucket, bound
}
