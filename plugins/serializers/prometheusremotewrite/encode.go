package prometheusremotewrite

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The field numbers of prompb (remote write 1.0) that the encoder writes.
const (
	writeRequestTimeseries = 1 // WriteRequest.timeseries
	timeSeriesLabels       = 1 // TimeSeries.labels
	timeSeriesSamples      = 2 // TimeSeries.samples
	labelName              = 1 // Label.name
	labelValue             = 2 // Label.value
	sampleValue            = 1 // Sample.value, double
	sampleTimestamp        = 2 // Sample.timestamp, int64 milliseconds
)

// encode appends the WriteRequest of the collected series to dst. Each message's length is
// computed before it is written, so the bytes go straight into dst.
func (c *collector) encode(dst []byte) []byte {
	for i := range c.series {
		s := &c.series[i]
		labels := c.labels[s.lo:s.hi]
		samples := c.samples(s)
		size := 0
		for _, l := range labels {
			size += nested(labelSize(l))
		}
		for _, smp := range samples {
			size += nested(sampleSize(smp))
		}
		dst = protowire.AppendTag(dst, writeRequestTimeseries, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(size))
		for _, l := range labels {
			dst = protowire.AppendTag(dst, timeSeriesLabels, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(labelSize(l)))
			dst = appendString(dst, labelName, l.name)
			dst = appendString(dst, labelValue, l.value)
		}
		for _, smp := range samples {
			dst = protowire.AppendTag(dst, timeSeriesSamples, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(sampleSize(smp)))
			if smp.value != 0 { // NaN included: it is not 0
				dst = protowire.AppendTag(dst, sampleValue, protowire.Fixed64Type)
				dst = protowire.AppendFixed64(dst, math.Float64bits(smp.value))
			}
			if smp.ts != 0 {
				dst = protowire.AppendTag(dst, sampleTimestamp, protowire.VarintType)
				dst = protowire.AppendVarint(dst, uint64(smp.ts))
			}
		}
	}
	return dst
}

// nested is the size of a message of size n as a field of another: tag, length, message.
// Every field number here is below 16, so each tag is one byte.
func nested(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// labelSize is the size of a Label; empty strings are left out, as proto3 leaves them.
func labelSize(l label) int {
	n := 0
	if l.name != "" {
		n += nested(len(l.name))
	}
	if l.value != "" {
		n += nested(len(l.value))
	}
	return n
}

// sampleSize is the size of a Sample; zeros are left out, as proto3 leaves them (a NaN is
// not zero, and -0 is, as gogo-protobuf compares).
func sampleSize(s sample) int {
	n := 0
	if s.value != 0 {
		n += 1 + 8
	}
	if s.ts != 0 {
		n += 1 + protowire.SizeVarint(uint64(s.ts))
	}
	return n
}

func appendString(dst []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}
