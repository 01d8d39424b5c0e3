package iotdb

import (
	"hash/maphash"
	"strings"

	"github.com/morse-agent/morse"
)

// Finding a metric's device is, after the numbers, the largest cost of a row: its path is
// the metric's name and tag values, each level checked against sanitize_tag and perhaps
// quoted, and then looked up by that text. The builder remembers, for every device it has
// seen, the name and tag values that made it, under a hash of them: a metric of a known
// device is found by hashing its strings and comparing them with the remembered ones, and
// its path is built only the first time. A hash that leads to another device (a collision,
// or two identities that make one path) falls back to building the path.

// identity is what made a device: a metric's name and, with convert_tags_to = "device_id",
// its tag values, cloned so that the device does not keep the metric's memory alive.
type identity struct {
	name   string
	levels []string
}

// is reports whether m has this identity.
func (id *identity) is(m *morse.Metric, tagsAsFields bool) bool {
	if m.Name() != id.name {
		return false
	}
	if tagsAsFields {
		return true
	}
	tags := m.Tags()
	if len(tags) != len(id.levels) {
		return false
	}
	for i := range tags {
		if tags[i].Value != id.levels[i] {
			return false
		}
	}
	return true
}

func identityOf(m *morse.Metric, tagsAsFields bool) identity {
	id := identity{name: strings.Clone(m.Name())}
	if !tagsAsFields {
		for _, t := range m.Tags() {
			id.levels = append(id.levels, strings.Clone(t.Value))
		}
	}
	return id
}

// hashIdentity hashes m's name and, unless tags are fields, its tag values.
func (b *builder) hashIdentity(m *morse.Metric) uint64 {
	h := maphash.String(b.seed, m.Name())
	if !b.set.tagsAsFields {
		for _, t := range m.Tags() {
			h = h*0x9e3779b97f4a7c15 ^ maphash.String(b.seed, t.Value)
		}
	}
	return h
}

// deviceOf returns the index of the first tablet of m's device, making it when the device
// is new, or the error of a metric whose tags make no path.
func (b *builder) deviceOf(m *morse.Metric) (int, error) {
	h := b.hashIdentity(m)
	i, known := b.byHash[h]
	if known && b.tablets[i].id.is(m, b.set.tagsAsFields) {
		return i, nil
	}
	if err := b.device(m); err != nil {
		return 0, err
	}
	i, ok := b.byDevice[string(b.dev)] // no allocation: a lookup by the bytes
	if !ok {
		i = b.newTablet(string(b.dev))
		b.tablets[i].id = identityOf(m, b.set.tagsAsFields)
		b.byDevice[b.tablets[i].device] = i
	}
	if !known {
		b.byHash[h] = i
	}
	return i, nil
}
