package prometheusremotewrite

import (
	"cmp"
	"slices"
	"strings"
)

// labelSet is the labels a metric gives all its series: c.labels[lo:hi], sorted by name,
// one per name, no __name__ among them.
type labelSet struct {
	lo, hi int32
	next   int32 // the next set of the same hash, or -1
	pbLo   int32 // where its labels are encoded in c.setPB, or -1 before they are
}

// series is one series of the batch: its set's labels with __name__ and, for a bucket or a
// quantile, extra, and its samples, in the order they came.
type series struct {
	seriesKey
	first    sample
	more     []sample
	unsorted bool  // some sample came before an earlier one
	nameID   int32 // the name's number in c.nameOf, or -1 for a name made per sample
	lo, hi   int32 // its labels in c.sorted, for prometheus_sort_metrics
}

// seriesKey identifies a series within the batch.
type seriesKey struct {
	set   int32
	name  string
	extra label // le or quantile, or none (the empty name)
}

// setOfMetric returns the label set of the metric at hand, c.common, found or created.
func (c *collector) setOfMetric() int32 {
	if c.set >= 0 {
		return c.set
	}
	c.common = normalize(c.common)
	if c.last >= 0 && slices.Equal(c.setLabels(c.last), c.common) {
		c.set = c.last // metrics of one tag set come together: no hash needed
		return c.set
	}
	c.h.Reset()
	for _, l := range c.common {
		c.h.WriteString(l.name)
		c.h.WriteByte(0)
		c.h.WriteString(l.value)
		c.h.WriteByte(0)
	}
	h := c.h.Sum64()
	first, ok := c.setOf[h]
	if ok {
		for i := first; i >= 0; i = c.sets[i].next {
			if slices.Equal(c.setLabels(i), c.common) {
				c.set, c.last = i, i
				return i
			}
		}
	} else {
		first = -1
	}
	lo := int32(len(c.labels))
	c.labels = append(c.labels, c.common...)
	c.set = int32(len(c.sets))
	c.sets = append(c.sets, labelSet{lo: lo, hi: int32(len(c.labels)), next: first, pbLo: -1})
	c.setOf[h] = c.set
	c.last = c.set
	return c.set
}

func (c *collector) setLabels(i int32) []label {
	s := c.sets[i]
	return c.labels[s.lo:s.hi]
}

// normalize sorts ls by name and keeps, of labels of one name, the first; a label named
// __name__ is left out, since the series' own name wins over it. The series' labels are
// then those of a receiver's rules, as Telegraf writes them: sorted, no name twice.
func normalize(ls []label) []label {
	if !slices.IsSortedFunc(ls, byName) {
		slices.SortStableFunc(ls, byName)
	}
	ls = slices.CompactFunc(ls, func(a, b label) bool { return a.name == b.name })
	if i, ok := slices.BinarySearchFunc(ls, "__name__", func(l label, n string) int { return strings.Compare(l.name, n) }); ok {
		ls = slices.Delete(ls, i, i+1)
	}
	return ls
}

func byName(a, b label) int { return strings.Compare(a.name, b.name) }

// key is the series of name and extra in the metric's set; an extra label of a name the
// set has is left out (the tag wins, as in Telegraf).
func (c *collector) key(name string, extra label) seriesKey {
	k := seriesKey{set: c.setOfMetric(), name: name}
	if extra.name != "" {
		if _, dup := slices.BinarySearchFunc(c.setLabels(k.set), extra.name, func(l label, n string) int { return strings.Compare(l.name, n) }); !dup {
			k.extra = extra
		}
	}
	return k
}

// put adds smp to the series of name and extra.
func (c *collector) put(name string, extra label, smp sample) {
	k := c.key(name, extra)
	if k.extra.name == "" {
		c.putByID(c.nameID(name), smp)
		return
	}
	if i, ok := c.seriesOf[k]; ok {
		c.series[i].add(smp)
		return
	}
	c.seriesOf[k] = int32(len(c.series))
	c.series = append(c.series, series{seriesKey: k, first: smp, nameID: -1})
}

// putByID adds smp to the series of name number id, without extra label: one 8-byte key
// for the map, no string hashed.
func (c *collector) putByID(id int32, smp sample) {
	if i, ok := c.byID(id); ok {
		c.series[i].add(smp)
		return
	}
	c.newByID(id, smp)
}

func (c *collector) byID(id int32) (int32, bool) {
	i, ok := c.seriesByID[uint64(uint32(c.setOfMetric()))<<32|uint64(uint32(id))]
	return i, ok
}

func (c *collector) newByID(id int32, smp sample) {
	set := c.setOfMetric()
	c.seriesByID[uint64(uint32(set))<<32|uint64(uint32(id))] = int32(len(c.series))
	c.series = append(c.series, series{seriesKey: seriesKey{set: set, name: c.nameOf[id]}, first: smp, nameID: id})
}

// putIfAbsent adds a placeholder, 0, to the series of name and extra unless the batch has
// the series already.
func (c *collector) putIfAbsent(name string, extra label, ts int64) {
	smp := sample{ts: ts, weight: placeholder}
	k := c.key(name, extra)
	if k.extra.name == "" {
		if id := c.nameID(name); !c.has(id) {
			c.newByID(id, smp)
		}
		return
	}
	if _, ok := c.seriesOf[k]; !ok {
		c.seriesOf[k] = int32(len(c.series))
		c.series = append(c.series, series{seriesKey: k, first: smp, nameID: -1})
	}
}

func (c *collector) has(id int32) bool {
	_, ok := c.byID(id)
	return ok
}

// seriesLabels appends the labels of s to dst, sorted by name.
func (c *collector) seriesLabels(dst []label, s *series) []label {
	set := c.setLabels(s.set)
	nameAt, extraAt := c.insertions(set, s)
	name := label{"__name__", s.name}
	for i := 0; i <= len(set); i++ {
		switch {
		case i == nameAt && i == extraAt && s.extra.name < name.name:
			dst = append(dst, s.extra, name)
		case i == nameAt && i == extraAt:
			dst = append(dst, name, s.extra)
		case i == nameAt:
			dst = append(dst, name)
		case i == extraAt:
			dst = append(dst, s.extra)
		}
		if i < len(set) {
			dst = append(dst, set[i])
		}
	}
	return dst
}

// insertions are the places in set before which __name__ and s's extra label go; the
// extra's is -1 when it has none.
func (c *collector) insertions(set []label, s *series) (nameAt, extraAt int) {
	// Tag names are mostly lower case, after "__name__": the first place is the usual one.
	if len(set) > 0 && set[0].name > "__name__" {
		nameAt = 0
	} else {
		nameAt, _ = slices.BinarySearchFunc(set, "__name__", func(l label, n string) int { return strings.Compare(l.name, n) })
	}
	extraAt = -1
	if s.extra.name != "" {
		extraAt, _ = slices.BinarySearchFunc(set, s.extra.name, func(l label, n string) int { return strings.Compare(l.name, n) })
	}
	return nameAt, extraAt
}

func (s *series) last() *sample {
	if len(s.more) > 0 {
		return &s.more[len(s.more)-1]
	}
	return &s.first
}

// add adds a sample: after the last, in its place at the same time, or out of order, to be
// sorted when the series is written.
func (s *series) add(smp sample) {
	last := s.last()
	switch {
	case smp.ts == last.ts:
		merge(last, smp)
		return
	case smp.ts < last.ts:
		s.unsorted = true
	}
	s.more = append(s.more, smp)
}

// merge puts smp in place of old, of the same time, when it weighs no less, or when it is a
// count's +Inf bucket and old is 0.
func merge(old *sample, smp sample) {
	if smp.weight >= old.weight || smp.weight == fromCount && old.value == 0 {
		*old = smp
	}
}

// samples returns the series' samples in time order, one per time, in c.buf.
func (c *collector) samples(s *series) []sample {
	buf := append(c.buf[:0], s.first)
	buf = append(buf, s.more...)
	if s.unsorted {
		slices.SortStableFunc(buf, func(a, b sample) int { return cmp.Compare(a.ts, b.ts) })
		out := buf[:1]
		for _, smp := range buf[1:] {
			if last := &out[len(out)-1]; last.ts == smp.ts {
				merge(last, smp)
			} else {
				out = append(out, smp)
			}
		}
		buf = out
	}
	c.buf = buf
	return buf
}

// sortSeries puts the series in Telegraf's prometheus_sort_metrics order: fewer labels
// first, then by each label's name and value.
func (c *collector) sortSeries() {
	for i := range c.series {
		s := &c.series[i]
		s.lo = int32(len(c.sorted))
		c.sorted = c.seriesLabels(c.sorted, s)
		s.hi = int32(len(c.sorted))
	}
	slices.SortStableFunc(c.series, func(a, b series) int {
		la, lb := c.sorted[a.lo:a.hi], c.sorted[b.lo:b.hi]
		if d := cmp.Compare(len(la), len(lb)); d != 0 {
			return d
		}
		for i := range la {
			if d := strings.Compare(la[i].name, lb[i].name); d != 0 {
				return d
			}
			if d := strings.Compare(la[i].value, lb[i].value); d != 0 {
				return d
			}
		}
		return 0
	})
}
