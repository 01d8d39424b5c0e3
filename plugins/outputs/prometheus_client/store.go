package prometheusclient

import (
	"slices"
	"strings"
	"sync"
)

// kind is a family's Prometheus type.
type kind uint8

const (
	untypedKind kind = iota
	counterKind
	gaugeKind
	summaryKind
	histogramKind
)

var kindNames = [...]string{"untyped", "counter", "gauge", "summary", "histogram"}

// distribution reports whether k has buckets or quantiles.
func (k kind) distribution() bool { return k == summaryKind || k == histogramKind }

// bound is a histogram's bucket (upper bound, cumulative count) or a summary's quantile
// (quantile, value).
type bound struct{ at, value float64 }

// series is the current value of one label set of a family.
type series struct {
	labels string  // the label pairs as the text format writes them, without braces
	value  float64 // of a counter, gauge or untyped family
	sum    float64 // of a summary or histogram ...
	count  uint64
	bounds []bound // ... and its buckets or quantiles, by ascending bound
	timeNs int64   // the metric's time (UnixNano), for export_timestamp
	added  int64   // when it was last written (UnixNano), for expiration_interval
}

// merge sets the bound at, keeping bounds sorted and replacing one already there.
func (s *series) merge(at, v float64) {
	i, found := slices.BinarySearchFunc(s.bounds, at, func(b bound, at float64) int {
		switch {
		case b.at < at:
			return -1
		case b.at > at:
			return 1
		}
		return 0
	})
	if found {
		s.bounds[i].value = v
		return
	}
	s.bounds = slices.Insert(s.bounds, i, bound{at, v})
}

// family is one metric family: a name, a type and its series, in the order first written.
type family struct {
	name   string
	typ    kind
	index  map[string]int32 // labels -> position in series
	series []series
}

// store holds the current value of every series written, up to max series: it is what a
// scrape serves. Its methods are safe for concurrent use.
type store struct {
	mu     sync.Mutex
	fams   map[string]*family
	sorted []*family // fams by name, when !dirty
	dirty  bool
	n      int // series in all families
	max    int
}

func newStore(max int) *store { return &store{fams: map[string]*family{}, max: max} }

// family returns the family name, creating it with typ, or nil when it exists with a type
// that cannot take samples of typ (a histogram's samples into a gauge): two families of
// one name would make the exposition invalid.
func (s *store) family(name string, typ kind) *family {
	f := s.fams[name]
	if f == nil {
		f = &family{name: name, typ: typ, index: map[string]int32{}}
		s.fams[name] = f
		s.dirty = true
		return f
	}
	if f.typ != typ && (f.typ.distribution() || typ.distribution()) {
		return nil
	}
	return f
}

// get returns the series of labels in f, creating it when there is room; nil when the
// store is full. labels is looked up without being copied and copied when kept.
func (s *store) get(f *family, labels []byte) *series {
	if i, ok := f.index[string(labels)]; ok {
		return &f.series[i]
	}
	if s.n >= s.max {
		return nil
	}
	key := string(labels)
	f.index[key] = int32(len(f.series))
	f.series = append(f.series, series{labels: key})
	s.n++
	return &f.series[len(f.series)-1]
}

// expire removes the series written before deadline (UnixNano), and the families left
// empty.
func (s *store) expire(deadline int64) {
	for name, f := range s.fams {
		kept := f.series[:0]
		for _, sr := range f.series {
			if sr.added >= deadline {
				kept = append(kept, sr)
			}
		}
		if len(kept) == len(f.series) {
			continue
		}
		s.n -= len(f.series) - len(kept)
		clear(f.series[len(kept):]) // let the labels and bounds of the removed go
		f.series = kept
		if len(kept) == 0 {
			delete(s.fams, name)
			s.dirty = true
			continue
		}
		clear(f.index)
		for i := range kept {
			f.index[kept[i].labels] = int32(i)
		}
	}
}

// families returns the families by name; under s.mu.
func (s *store) families() []*family {
	if s.dirty {
		s.sorted = s.sorted[:0]
		for _, f := range s.fams {
			s.sorted = append(s.sorted, f)
		}
		slices.SortFunc(s.sorted, func(a, b *family) int { return strings.Compare(a.name, b.name) })
		s.dirty = false
	}
	return s.sorted
}
