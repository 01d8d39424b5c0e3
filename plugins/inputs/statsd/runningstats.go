package statsd

import (
	"math"
	"math/rand/v2"
	"slices"
)

// medianLimit is how many of a timing's latest values its median is taken over, as in
// Telegraf.
const medianLimit = 1000

// defaultPercentileLimit is percentile_limit's value when it is 0, as in Telegraf.
const defaultPercentileLimit = 1000

// runningStats summarises the values of one timing or histogram field over an interval, the
// way Telegraf's statsd does: an exact count, sum, bounds, mean and population standard
// deviation (computed shifted by the first value, which keeps the variance accurate for
// values far from zero), a median of the last 1000 values, and percentiles estimated from a
// reservoir of percentile_limit values in which, once full, each new value replaces a random
// one. Its memory is bounded by the two limits, whatever the number of values.
type runningStats struct {
	k, ex, ex2   float64
	n            int64
	sum          float64
	lower, upper float64
	perc         []float64
	percLimit    int
	sorted       bool
	med          []float64
	medNext      int
}

func newRunningStats(percLimit int) *runningStats {
	if percLimit <= 0 {
		percLimit = defaultPercentileLimit
	}
	return &runningStats{percLimit: percLimit}
}

// add takes in one value.
func (rs *runningStats) add(v float64) {
	rs.sorted = false
	if rs.n == 0 {
		rs.k, rs.lower, rs.upper = v, v, v
	}
	rs.n++
	rs.ex += v - rs.k
	rs.ex2 += (v - rs.k) * (v - rs.k)
	rs.sum += v
	if v > rs.upper {
		rs.upper = v
	} else if v < rs.lower {
		rs.lower = v
	}
	if len(rs.perc) < rs.percLimit {
		rs.perc = append(rs.perc, v)
	} else {
		rs.perc[rand.IntN(len(rs.perc))] = v //nolint:gosec // sampling, not security
	}
	if len(rs.med) < medianLimit {
		rs.med = append(rs.med, v)
	} else {
		rs.med[rs.medNext] = v
	}
	rs.medNext = (rs.medNext + 1) % medianLimit
}

// closedForm is the weight from which addN takes a value in once rather than one copy at
// a time: a line "t:1|ms|@0.0000001" would otherwise cost ten million additions.
const closedForm = 1024

// addN takes in v n times, as a sampled value counts: one by one for small n, so that
// the sums are those of Telegraf's repeated additions, and at once for large n, with as
// many copies in the reservoirs as they can hold.
func (rs *runningStats) addN(v float64, n int64) {
	if n < closedForm {
		for range n {
			rs.add(v)
		}
		return
	}
	copies := min(n, int64(max(rs.percLimit, medianLimit)))
	for range copies {
		rs.add(v)
	}
	w := float64(n - copies)
	rs.n += n - copies
	rs.ex += w * (v - rs.k)
	rs.ex2 += w * (v - rs.k) * (v - rs.k)
	rs.sum += w * v
}

func (rs *runningStats) mean() float64 { return rs.k + rs.ex/float64(rs.n) }

func (rs *runningStats) stddev() float64 {
	return math.Sqrt((rs.ex2 - rs.ex*rs.ex/float64(rs.n)) / float64(rs.n))
}

// median is the middle of the last values, or the mean of the two middle ones.
func (rs *runningStats) median() float64 {
	v := slices.Clone(rs.med) // the ring keeps its order for the values that replace the oldest
	slices.Sort(v)
	switch c := len(v); {
	case c == 0:
		return 0
	case c%2 == 0:
		return (v[c/2-1] + v[c/2]) / 2
	default:
		return v[c/2]
	}
}

// percentile is the value at p% of the sorted reservoir, as Telegraf picks it: index
// len*p/100 truncated, within the reservoir.
func (rs *runningStats) percentile(p float64) float64 {
	p = min(p, 100)
	if !rs.sorted {
		slices.Sort(rs.perc)
		rs.sorted = true
	}
	i := int(float64(len(rs.perc)) * p / 100)
	return rs.perc[max(0, min(i, len(rs.perc)-1))]
}
