package otlpmetrics

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
)

// kind is the OTLP type of a metric.
type kind uint8

const (
	kindGauge kind = iota + 1
	kindSum
	kindHistogram
)

func (k kind) String() string {
	switch k {
	case kindGauge:
		return "gauge"
	case kindSum:
		return "sum"
	case kindHistogram:
		return "histogram"
	}
	return "unknown"
}

// number is a data point's value: an integer or a double.
type number struct {
	isInt bool
	i     int64
	f     float64
}

// numberOf reads a field as OTLP number. An unsigned integer above the largest int64
// becomes a double: the library casts it to int64, which would make it negative.
func numberOf(v morse.Value) (number, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		return number{f: v.Float()}, true
	case morse.TypeInt:
		return number{isInt: true, i: v.Int()}, true
	case morse.TypeUint:
		if v.Uint() > math.MaxInt64 {
			return number{f: float64(v.Uint())}, true
		}
		return number{isInt: true, i: int64(v.Uint())}, true
	}
	return number{}, false
}

// floatOf reads a numeric field as a double, for counts, sums and buckets. The library
// takes only doubles there (Telegraf's Prometheus parser writes nothing else); integers
// are taken too.
func floatOf(v morse.Value) (float64, bool) {
	n, ok := numberOf(v)
	if !ok {
		return 0, false
	}
	if n.isInt {
		return float64(n.i), true
	}
	return n.f, true
}

// piece is what one metric adds to one OTLP metric.
type piece struct {
	name  string
	kind  kind
	start uint64
	num   number // gauge, sum
	// A v1 histogram: a whole data point.
	count  uint64
	sum    float64
	bounds []float64
	counts []uint64
	// A v2 line adds to the data point of its time and attributes: a bound and its bucket
	// (le, whose count is cumulative and inserted among the others, or a quantile read as
	// a histogram bucket, appended), or the count and sum.
	v2       bool
	hasBound bool
	insert   bool
	bound    float64
	bucket   uint64
	hasCS    bool
}

func fieldOf(fields []morse.Field, key string) (morse.Value, bool) {
	for _, f := range fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return morse.Value{}, false
}

func numericKey(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// plan is the library's AddPoint for an untyped metric: the measurement "prometheus" is
// read as v2, a metric_type=timing tag as no schema, anything else as v1; a metric whose
// type neither infers becomes one gauge per numeric field, named measurement_field.
func plan(name string, t *tagSplit, fields []morse.Field) ([]piece, error) {
	switch {
	case name == measurementPrometheus:
		if p, err, known := planV2(t, fields); known {
			return p, err
		}
	case t.timing:
	default:
		if p, err, known := planV1(name, fields); known {
			return p, err
		}
	}
	return planFields(name, fields), nil
}

// planFields is the library's point of unknown schema.
func planFields(name string, fields []morse.Field) []piece {
	start := startTime(fields)
	var out []piece
	for _, f := range fields {
		if f.Key == fieldStartTimeStatsd {
			continue
		}
		if n, ok := numberOf(f.Value); ok {
			out = append(out, piece{name: name + "_" + f.Key, kind: kindGauge, num: n, start: start})
		}
	}
	return out
}

// planV1 reads a v1 metric; known is false when its type does not infer.
func planV1(name string, fields []morse.Field) (p []piece, err error, known bool) {
	start := startTime(fields)
	if v, ok := fieldOf(fields, fieldGauge); ok {
		n, ok := numberOf(v)
		if !ok {
			return nil, fmt.Errorf("unsupported gauge value type %s", v.Type()), true
		}
		return []piece{{name: name, kind: kindGauge, num: n, start: start}}, nil, true
	}
	if v, ok := fieldOf(fields, fieldCounter); ok {
		n, ok := numberOf(v)
		if !ok {
			return nil, fmt.Errorf("unsupported counter value type %s", v.Type()), true
		}
		return []piece{{name: name, kind: kindSum, num: n, start: start}}, nil, true
	}
	for _, f := range fields {
		if f.Key == fieldCount || f.Key == fieldSum || numericKey(f.Key) {
			// Histogram and summary look alike without all of a family's points, so the
			// library takes a histogram.
			h, err := histogramV1(name, fields, start)
			return []piece{h}, err, true
		}
	}
	return nil, nil, false
}

func histogramV1(name string, fields []morse.Field, start uint64) (piece, error) {
	p := piece{name: name, kind: kindHistogram, start: start}
	var hasCount, hasSum bool
	for _, f := range fields {
		switch {
		case f.Key == fieldCount:
			v, ok := floatOf(f.Value)
			if !ok {
				return p, fmt.Errorf("unsupported histogram count value type %s", f.Value.Type())
			}
			p.count, hasCount = uint64(v), true
		case f.Key == fieldSum:
			v, ok := floatOf(f.Value)
			if !ok {
				return p, fmt.Errorf("unsupported histogram sum value type %s", f.Value.Type())
			}
			p.sum, hasSum = v, true
		case numericKey(f.Key):
			bound, _ := strconv.ParseFloat(f.Key, 64)
			v, ok := floatOf(f.Value)
			if !ok {
				return p, fmt.Errorf("unsupported histogram bucket bound value type %s", f.Value.Type())
			}
			p.bounds, p.counts = append(p.bounds, bound), append(p.counts, uint64(v))
		}
	}
	if !hasCount {
		return p, errors.New("histogram count field not found")
	}
	if !hasSum {
		return p, errors.New("histogram sum field not found")
	}
	sort.Sort(buckets{p.bounds, p.counts})
	cumulative := true
	for i := 0; i+1 < len(p.counts); i++ {
		if p.counts[i] > p.counts[i+1] {
			cumulative = false // an untyped summary read as a histogram
			break
		}
	}
	if cumulative {
		for i := len(p.counts) - 1; i > 0; i-- {
			p.counts[i] -= p.counts[i-1]
		}
	}
	return p, nil
}

type buckets struct {
	bounds []float64
	counts []uint64
}

func (b buckets) Len() int           { return len(b.bounds) }
func (b buckets) Less(i, j int) bool { return b.bounds[i] < b.bounds[j] }
func (b buckets) Swap(i, j int) {
	b.bounds[i], b.bounds[j] = b.bounds[j], b.bounds[i]
	b.counts[i], b.counts[j] = b.counts[j], b.counts[i]
}

// planV2 reads a line of the measurement "prometheus"; known is false when its type does
// not infer. The library infers a histogram from an le or a quantile tag or a field named
// *_count or *_sum, so an untyped summary's lines become a histogram whose bounds are the
// quantiles, and a gauge from a line of one field.
func planV2(t *tagSplit, fields []morse.Field) (p []piece, err error, known bool) {
	hist := t.hasLe || t.hasQ
	for _, f := range fields {
		if strings.HasSuffix(f.Key, suffixCount) || strings.HasSuffix(f.Key, suffixSum) {
			hist = true
		}
	}
	switch {
	case hist:
		h, err := histogramV2(t, fields)
		return []piece{h}, err, true
	case len(fields) == 1:
		n, ok := numberOf(fields[0].Value)
		if !ok {
			return nil, fmt.Errorf("unsupported gauge value type %s", fields[0].Value.Type()), true
		}
		return []piece{{name: fields[0].Key, kind: kindGauge, num: n}}, nil, true
	}
	return nil, nil, false
}

// histogramV2 is the library's convertHistogramV2, checked whole before anything is added.
func histogramV2(t *tagSplit, fields []morse.Field) (piece, error) {
	p := piece{kind: kindHistogram, v2: true}
	switch {
	case t.hasLe:
		if len(fields) != 1 {
			return p, fmt.Errorf("histogram metric 'le' tagged line should have 1 field, found %d", len(fields))
		}
		p.name = strings.TrimSuffix(fields[0].Key, suffixBucket)
	case t.hasQ:
		if len(fields) != 1 {
			return p, fmt.Errorf("summary metric (interpreted as histogram) 'quantile' tagged line should have 1 field, found %d", len(fields))
		}
		p.name = fields[0].Key
	default:
		if len(fields) != 2 {
			return p, fmt.Errorf("histogram metric count+sum fields should have two values, found %d", len(fields))
		}
		for _, f := range fields {
			name, ok := strings.CutSuffix(f.Key, suffixCount)
			if !ok {
				if name, ok = strings.CutSuffix(f.Key, suffixSum); !ok {
					return p, fmt.Errorf("histogram count+sum field lacks _count or _sum suffix, found '%s'", f.Key)
				}
			}
			p.name = name
		}
	}
	if err := bucketV2(&p, t, fields); err != nil {
		return p, err
	}
	count, hasCount := fieldOf(fields, p.name+suffixCount)
	sum, hasSum := fieldOf(fields, p.name+suffixSum)
	switch {
	case hasCount && !hasSum:
		return p, errors.New("histogram count has no matching sum")
	case hasSum && !hasCount:
		return p, errors.New("histogram sum has no matching count")
	case hasCount:
		c, ok := floatOf(count)
		if !ok {
			return p, fmt.Errorf("invalid value type %s for histogram count", count.Type())
		}
		s, ok := floatOf(sum)
		if !ok {
			return p, fmt.Errorf("invalid value type %s for histogram sum", sum.Type())
		}
		p.count, p.sum, p.hasCS = uint64(c), s, true
	}
	return p, nil
}

// bucketV2 reads the bound and bucket of an le or quantile line.
func bucketV2(p *piece, t *tagSplit, fields []morse.Field) error {
	bucket, hasBucket := fieldOf(fields, p.name+suffixBucket)
	switch {
	case t.hasLe && !hasBucket:
		return errors.New("histogram bucket bound has no matching count")
	case !t.hasLe && hasBucket:
		return errors.New("histogram bucket count has no matching bound")
	case t.hasLe:
		bound, err := strconv.ParseFloat(t.le, 64)
		if err != nil {
			return fmt.Errorf("invalid value for histogram bucket bound: '%s'", t.le)
		}
		c, ok := floatOf(bucket)
		if !ok {
			return fmt.Errorf("invalid value type %s for histogram bucket count", bucket.Type())
		}
		p.hasBound, p.insert, p.bound, p.bucket = true, true, bound, uint64(c)
	}
	value, hasValue := fieldOf(fields, p.name)
	switch {
	case t.hasQ && !hasValue:
		return errors.New("summary (interpreted as histogram) quantile has no matching value")
	case !t.hasQ && hasValue:
		return errors.New("summary (interpreted as histogram) quantile value has no matching quantile")
	case t.hasQ:
		q, err := strconv.ParseFloat(t.quantile, 64)
		if err != nil {
			return fmt.Errorf("invalid value for summary (interpreted as histogram) quantile: '%s'", t.quantile)
		}
		v, ok := floatOf(value)
		if !ok {
			return fmt.Errorf("invalid value type %s for summary (interpreted as histogram) quantile value", value.Type())
		}
		p.hasBound, p.bound, p.bucket = true, q, uint64(v)
	}
	return nil
}
