package prometheusremotewrite

import (
	"encoding/binary"
	"math"
	"slices"

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
// computed before it is written, so the bytes go straight into dst, which grows once per
// series; the tags are single bytes and most lengths one-byte varints, which the appends
// below write without protowire's general calls (a third of the encoder's time, measured
// in outputs.http against vmagent, docs/bench/vmagent-push.md).
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
		dst = slices.Grow(dst, nested(size))
		dst = append(dst, bytesTag(writeRequestTimeseries))
		dst = appendVarint(dst, uint64(size))
		for _, l := range labels {
			dst = append(dst, bytesTag(timeSeriesLabels))
			dst = appendVarint(dst, uint64(labelSize(l)))
			dst = appendString(dst, labelName, l.name)
			dst = appendString(dst, labelValue, l.value)
		}
		for _, smp := range samples {
			dst = append(dst, bytesTag(timeSeriesSamples))
			dst = appendVarint(dst, uint64(sampleSize(smp)))
			if smp.value != 0 { // NaN included: it is not 0
				dst = append(dst, byte(sampleValue)<<3|byte(protowire.Fixed64Type))
				dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(smp.value))
			}
			if smp.ts != 0 {
				dst = append(dst, byte(sampleTimestamp)<<3|byte(protowire.VarintType))
				dst = appendVarint(dst, uint64(smp.ts))
			}
		}
	}
	return dst
}

// bytesTag is the one-byte tag of a length-delimited field numbered below 16.
func bytesTag(num protowire.Number) byte { return byte(num)<<3 | byte(protowire.BytesType) }

// appendVarint is protowire.AppendVarint, inlined for the one-byte case.
func appendVarint(dst []byte, v uint64) []byte {
	if v < 0x80 {
		return append(dst, byte(v))
	}
	return protowire.AppendVarint(dst, v)
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
	dst = append(dst, bytesTag(num))
	dst = appendVarint(dst, uint64(len(s)))
	return append(dst, s...)
}
