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
// in outputs.http against vmagent, docs/bench/vmagent-push.md). A label set's labels are
// encoded once, and copied into each of its series around __name__ (and le or quantile).
func (c *collector) encode(dst []byte) []byte {
	c.labelEnd = slices.Grow(c.labelEnd[:0], len(c.labels))[:len(c.labels)]
	for i := range c.series {
		s := &c.series[i]
		set := &c.sets[s.set]
		if set.pbLo < 0 {
			c.encodeSet(set)
		}
		labels := c.labels[set.lo:set.hi]
		nameAt, extraAt := c.insertions(labels, s)
		name := label{"__name__", s.name}
		samples := c.samples(s)
		var namePB []byte // the __name__ label, encoded once for all batches when numbered
		if s.nameID >= 0 {
			namePB = c.namePB[s.nameID]
		}
		size := nested(labelSize(name)) + int(c.setEnd(set, len(labels))-set.pbLo)
		if extraAt >= 0 {
			size += nested(labelSize(s.extra))
		}
		for _, smp := range samples {
			size += nested(sampleSize(smp))
		}
		dst = slices.Grow(dst, nested(size))
		dst = append(dst, bytesTag(writeRequestTimeseries))
		dst = appendVarint(dst, uint64(size))
		// The set's bytes in up to three pieces, cut where __name__ and extra go.
		cuts := [2]int{nameAt, extraAt}
		ins := [2]label{name, s.extra}
		if extraAt >= 0 && (extraAt < nameAt || extraAt == nameAt && s.extra.name < name.name) {
			cuts[0], cuts[1], ins[0], ins[1] = extraAt, nameAt, s.extra, name
		}
		from := 0
		for j, at := range cuts {
			if at < 0 {
				continue
			}
			dst = append(dst, c.setPB[c.setEnd(set, from):c.setEnd(set, at)]...)
			if ins[j].name == "__name__" && namePB != nil {
				dst = append(dst, namePB...)
			} else {
				dst = appendLabel(dst, ins[j])
			}
			from = at
		}
		dst = append(dst, c.setPB[c.setEnd(set, from):c.setEnd(set, len(labels))]...)
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

// encodeSet writes the labels of set into c.setPB, each a TimeSeries.labels field.
func (c *collector) encodeSet(set *labelSet) {
	set.pbLo = int32(len(c.setPB))
	for i := set.lo; i < set.hi; i++ {
		c.setPB = appendLabel(c.setPB, c.labels[i])
		c.labelEnd[i] = int32(len(c.setPB))
	}
}

// setEnd is where the first n labels of set end in c.setPB.
func (c *collector) setEnd(set *labelSet, n int) int32 {
	if n == 0 {
		return set.pbLo
	}
	return c.labelEnd[set.lo+int32(n)-1]
}

// appendLabel appends l as a TimeSeries.labels field.
func appendLabel(dst []byte, l label) []byte {
	dst = append(dst, bytesTag(timeSeriesLabels))
	dst = appendVarint(dst, uint64(labelSize(l)))
	dst = appendString(dst, labelName, l.name)
	return appendString(dst, labelValue, l.value)
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
