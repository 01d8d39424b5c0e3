package iotdb

import (
	"encoding/binary"

	"github.com/morse-agent/morse"
)

// Finding a metric's device is, after the numbers, the largest cost of a row: its path is
// the metric's name and tag values, each level checked against sanitize_tag and perhaps
// quoted, and then looked up by that text. The builder remembers, for every device it has
// seen, the raw name and tag values that made it, each prefixed with its length so that no
// two identities read alike: a metric of a known device is found by copying its strings and
// one map lookup, and its path is built only the first time.

// appendIdentity appends what makes m's device: its name and, unless tags are fields, its
// tag values, each after its length.
func appendIdentity(dst []byte, m *morse.Metric, tagsAsFields bool) []byte {
	name := m.Name()
	dst = append(binary.AppendUvarint(dst, uint64(len(name))), name...)
	if !tagsAsFields {
		for _, t := range m.Tags() {
			dst = append(binary.AppendUvarint(dst, uint64(len(t.Value))), t.Value...)
		}
	}
	return dst
}

// deviceOf returns the index of the first tablet of m's device, making it when the device
// is new, or the error of a metric whose tags make no path.
func (b *builder) deviceOf(m *morse.Metric) (int, error) {
	b.key = appendIdentity(b.key[:0], m, b.set.tagsAsFields)
	if i, ok := b.byIdentity[string(b.key)]; ok { // no allocation: a lookup by the bytes
		return i, nil
	}
	if err := b.device(m); err != nil {
		return 0, err
	}
	i, ok := b.byDevice[string(b.dev)]
	if !ok {
		i = b.newTablet(string(b.dev))
		b.byDevice[b.tablets[i].device] = i
	}
	b.byIdentity[string(b.key)] = i
	return i, nil
}
