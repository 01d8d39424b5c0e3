package prometheusremotewrite

import (
	"strings"

	"github.com/morse-agent/morse/plugins/serializers/prometheus"
)

// fieldNames numbers the series names of one measurement's fields; -1 is a field whose
// name sanitizes to nothing.
type fieldNames map[string]int32

// maxNames bounds the names a collector remembers; past it, it forgets them all between two
// batches (numbers must not change within one).
const maxNames = 4096

// fieldNames returns the names of measurement's fields, as distributions or not.
func (c *collector) fieldNames(measurement string, distribution bool) fieldNames {
	d := 0
	if distribution {
		d = 1
	}
	if c.names[d] == nil {
		c.names[d] = map[string]fieldNames{}
	}
	fn, ok := c.names[d][measurement]
	if !ok {
		fn = fieldNames{}
		// The key is copied: it may point into a large buffer of the input.
		c.names[d][strings.Clone(measurement)] = fn
	}
	return fn
}

// metricName is the number in c.nameOf of the sanitized name of a field's series
// (prometheus.MetricName), or -1 when sanitizing leaves nothing. The names are remembered
// from batch to batch, so that the same measurement and field are not joined and checked
// again for every sample, and the series of a batch are found by number.
func (c *collector) metricName(fn fieldNames, measurement, field string, distribution bool) int32 {
	if id, ok := fn[field]; ok {
		return id
	}
	id := int32(-1)
	if n, ok := prometheus.SanitizeMetricName(prometheus.MetricName(measurement, field, distribution), false); ok {
		id = c.nameID(n)
	}
	fn[strings.Clone(field)] = id
	return id
}

// nameID is the number of a series name, given one when new: one name has one number,
// whether it comes from a field or is made per sample (a histogram's name_sum).
func (c *collector) nameID(n string) int32 {
	if id, ok := c.idOf[n]; ok {
		return id
	}
	id := int32(len(c.nameOf))
	n = strings.Clone(n)
	c.nameOf = append(c.nameOf, n)
	c.namePB = append(c.namePB, appendLabel(nil, label{"__name__", n}))
	c.idOf[n] = id
	return id
}
