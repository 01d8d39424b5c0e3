package prometheusclient

import (
	"strings"

	"github.com/morse-agent/morse"
)

// markBatch finds the histograms and summaries of a version 2 batch by Telegraf's
// conventions: a field <name>_bucket of a metric tagged le is a bucket of histogram <name>;
// a field of a metric tagged quantile (but <name>_sum and <name>_count) a quantile of
// summary <name>. Their _sum and _count fields, which Telegraf's prometheus input writes
// in a metric of their own before the buckets, then join them.
func (c *converter) markBatch(batch []morse.Metric) {
	for _, m := range batch {
		_, le := m.Tag("le")
		_, q := m.Tag("quantile")
		if !le && !q {
			continue
		}
		name := m.Name()
		for _, f := range m.Fields() {
			switch {
			case le && strings.HasSuffix(f.Key, "_bucket"):
				c.marks[c.famName(name, f.Key, true)] = histogramKind
			case q && !strings.HasSuffix(f.Key, "_sum") && !strings.HasSuffix(f.Key, "_count"):
				c.marks[c.famName(name, f.Key, false)] = summaryKind
			}
		}
	}
}

// kindV2 is the type of a version 2 field: that of the histogram or summary it belongs to,
// by the batch or by what the store holds, or untyped.
func (c *converter) kindV2(st *store, m morse.Metric, f morse.Field) (string, kind) {
	if strings.HasSuffix(f.Key, "_bucket") || strings.HasSuffix(f.Key, "_sum") || strings.HasSuffix(f.Key, "_count") {
		name := c.famName(m.Name(), f.Key, true)
		if k := c.distribution(st, name); k != untypedKind {
			if k == summaryKind && strings.HasSuffix(f.Key, "_bucket") {
				return c.famName(m.Name(), f.Key, false), untypedKind
			}
			return name, k
		}
	}
	name := c.famName(m.Name(), f.Key, false)
	if _, q := m.Tag("quantile"); q {
		if k := c.distribution(st, name); k == summaryKind {
			return name, k
		}
	}
	k := untypedKind
	if strings.HasSuffix(name, "_total") {
		k = counterKind // Prometheus' convention for counters, which Telegraf's input would have typed
	}
	return name, c.scalarKind(name, k)
}

// distribution is the kind of name when the batch or the store has it as a histogram or
// summary, untyped otherwise.
func (c *converter) distribution(st *store, name string) kind {
	if k, ok := c.marks[name]; ok {
		return k
	}
	if f := st.fams[name]; f != nil && f.typ.distribution() {
		return f.typ
	}
	return untypedKind
}

// addV2 writes the fields of a version 2 metric: each is a sample of its own family.
func (c *converter) addV2(st *store, m morse.Metric, now int64) outcome {
	o := nothing
	var labels [2][]byte // by whether le/quantile are cut: scalar, distribution
	for _, f := range m.Fields() {
		if f.Value.Type() == morse.TypeString {
			continue
		}
		name, k := c.kindV2(st, m, f)
		if name == "" {
			continue
		}
		fam := st.family(name, k)
		if fam == nil {
			continue
		}
		d := 0
		if k.distribution() {
			d = 1
		}
		if labels[d] == nil {
			labels[d] = append([]byte(nil), c.labels(m, k)...)
		}
		r := c.putV2(st, fam, labels[d], m, f, now)
		if r == stored || o == nothing {
			o = r
		}
	}
	return o
}

// putV2 writes one field into its series.
func (c *converter) putV2(st *store, fam *family, labels []byte, m morse.Metric, f morse.Field, now int64) outcome {
	var (
		v     float64
		count uint64
		at    float64
		ok    bool
	)
	switch {
	case !fam.typ.distribution():
		v, ok = c.sampleValue(f.Value)
	case strings.HasSuffix(f.Key, "_sum"):
		v, ok = c.sampleValue(f.Value)
		ok = ok && f.Value.Type() != morse.TypeBool
	case strings.HasSuffix(f.Key, "_count"):
		count, ok = sampleCount(f.Value)
	case fam.typ == histogramKind:
		le, _ := m.Tag("le")
		at, ok = parseBound(le)
		if ok {
			count, ok = sampleCount(f.Value)
			v = float64(count)
		}
	default:
		q, _ := m.Tag("quantile")
		at, ok = parseBound(q)
		if ok {
			v, ok = c.sampleValue(f.Value)
		}
	}
	if !ok {
		return nothing
	}
	sr := st.get(fam, labels)
	if sr == nil {
		return full
	}
	ns := m.Time().UnixNano()
	if sr.added != 0 && ns < sr.timeNs {
		return stored // an older value of a series the store has newer: superseded, not lost
	}
	sr.timeNs, sr.added = ns, now
	switch {
	case !fam.typ.distribution():
		sr.value = v
	case strings.HasSuffix(f.Key, "_sum"):
		sr.sum = v
	case strings.HasSuffix(f.Key, "_count"):
		sr.count = count
	default:
		sr.merge(at, v)
	}
	return stored
}

// addV1 writes a version 1 metric: a histogram or summary as one series (fields count,
// sum and one per bucket or quantile, named after its bound), other metrics as one sample
// per field, of family <measurement>_<field>, or <measurement> for the fields "value",
// "counter" (a counter) and "gauge" (a gauge), which Telegraf's prometheus input writes.
func (c *converter) addV1(st *store, m morse.Metric, now int64) outcome {
	if k := kindV1(m); k != untypedKind {
		return c.addDistributionV1(st, m, k, now)
	}
	o := nothing
	var labels []byte
	for _, f := range m.Fields() {
		v, ok := c.sampleValue(f.Value)
		if !ok {
			continue
		}
		var name string
		k := untypedKind
		switch f.Key {
		case "value", "counter", "gauge":
			name, _ = c.names.metric(m.Name())
			if f.Key == "counter" {
				k = counterKind
			} else if f.Key == "gauge" {
				k = gaugeKind
			}
		default:
			name = c.famName(m.Name(), f.Key, false)
		}
		if name == "" {
			continue
		}
		fam := st.family(name, c.scalarKind(name, k))
		if fam == nil {
			continue
		}
		if labels == nil {
			labels = append([]byte(nil), c.labels(m, untypedKind)...)
		}
		sr := st.get(fam, labels)
		if sr == nil {
			o = full
			continue
		}
		ns := m.Time().UnixNano()
		if sr.added == 0 || ns >= sr.timeNs {
			sr.value, sr.timeNs, sr.added = v, ns, now
		}
		o = stored
	}
	return o
}

// kindV1 is the type of a version 1 metric: a histogram or summary when it has the fields
// count and sum and fields named after bounds; a histogram when one of them is +Inf, which
// a histogram always has and a summary's quantiles never are.
func kindV1(m morse.Metric) kind {
	var count, sum, bounds, inf bool
	for _, f := range m.Fields() {
		switch f.Key {
		case "count":
			count = true
		case "sum":
			sum = true
		default:
			if b, ok := parseBound(f.Key); ok {
				bounds = true
				inf = inf || b > 1e308
			}
		}
	}
	switch {
	case !count || !sum || !bounds:
		return untypedKind
	case inf:
		return histogramKind
	}
	return summaryKind
}

func (c *converter) addDistributionV1(st *store, m morse.Metric, k kind, now int64) outcome {
	name, ok := c.names.metric(m.Name())
	if !ok {
		return nothing
	}
	fam := st.family(name, k)
	if fam == nil {
		return nothing
	}
	sr := st.get(fam, c.labels(m, k))
	if sr == nil {
		return full
	}
	sr.bounds = sr.bounds[:0]
	for _, f := range m.Fields() {
		v, ok := c.sampleValue(f.Value)
		if !ok {
			continue
		}
		switch f.Key {
		case "sum":
			sr.sum = v
		case "count":
			sr.count, _ = sampleCount(f.Value)
		default:
			if b, ok := parseBound(f.Key); ok {
				if k == histogramKind {
					n, _ := sampleCount(f.Value)
					v = float64(n)
				}
				sr.merge(b, v)
			}
		}
	}
	sr.timeNs, sr.added = m.Time().UnixNano(), now
	return stored
}
