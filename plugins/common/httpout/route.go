package httpout

import "github.com/morse-agent/morse"

// Group is the metrics of one batch that share a key, in the order of the batch.
type Group[K comparable] struct {
	Key     K
	Metrics []morse.Metric
	// Positions are the metrics' positions in the batch, for an exact report of what a
	// refused group dropped.
	Positions []int
}

// Groups collects the groups of one batch. The zero value is ready.
type Groups[K comparable] struct {
	list []Group[K]
	idx  map[K]int
	n    int // metrics added since Reset: the position of the next one
	last int // the group of the metric added last; -1 or anything when none
}

// Add appends m, the batch's next metric, to the group of key, making the group on first
// use. Every metric of the batch is added once, in order, so each knows its position.
func (g *Groups[K]) Add(key K, m morse.Metric) {
	i := g.next(key)
	g.list[i].Metrics = append(g.list[i].Metrics, m)
}

// AddPosition is Add for an output that reads only the positions: the batch's next metric
// goes to the group of key, whose Metrics stay empty, which spares a copy of each metric.
func (g *Groups[K]) AddPosition(key K) { g.next(key) }

// next books the next position in the group of key and returns the group's index. Metrics
// of one key mostly come in runs, so the map is only read when the key changes.
func (g *Groups[K]) next(key K) int {
	i := g.last
	if g.n == 0 || g.list[i].Key != key {
		i = g.find(key)
		g.last = i
	}
	g.list[i].Positions = append(g.list[i].Positions, g.n)
	g.n++
	return i
}

// find returns the index of the group of key, made on first use.
func (g *Groups[K]) find(key K) int {
	if g.idx == nil {
		g.idx = map[K]int{}
	}
	i, ok := g.idx[key]
	if !ok {
		i = len(g.list)
		g.idx[key] = i
		if i < cap(g.list) {
			g.list = g.list[:i+1]
			g.list[i].Key = key
		} else {
			g.list = append(g.list, Group[K]{Key: key})
		}
	}
	return i
}

// Views returns the groups of batch, whose metrics were added with AddPosition, each with
// its metrics: a subslice of batch where the group's positions are one run, as in a batch in
// time order, and a copy otherwise. Nothing of the metrics stays in g, so what g keeps
// between batches is the positions alone, not a copy of the largest batch it ever split.
func (g *Groups[K]) Views(batch []morse.Metric) []Group[K] {
	out := make([]Group[K], len(g.list))
	for i, gr := range g.list {
		pos := gr.Positions
		first, last := pos[0], pos[len(pos)-1]
		ms := batch[first : last+1 : last+1] // a write cannot append into the batch
		if last-first+1 != len(pos) {
			ms = make([]morse.Metric, len(pos))
			for j, p := range pos {
				ms[j] = batch[p]
			}
		}
		out[i] = Group[K]{Key: gr.Key, Metrics: ms, Positions: pos}
	}
	return out
}

// List returns the groups in the order their keys first appeared.
func (g *Groups[K]) List() []Group[K] { return g.list }

// Reset empties the groups, keeping their storage but not the metrics: a batch belongs to
// the agent once Write returns.
func (g *Groups[K]) Reset() {
	for i := range g.list {
		clear(g.list[i].Metrics)
		g.list[i].Metrics = g.list[i].Metrics[:0]
		g.list[i].Positions = g.list[i].Positions[:0]
	}
	g.list = g.list[:0]
	g.n = 0
	clear(g.idx)
}

// TagOr is the value of m's tag, or def when m has no such tag, the tag is empty, or tag
// is "": where Telegraf's database_tag, bucket_tag and the like send a metric.
func TagOr(m morse.Metric, tag, def string) string {
	if tag != "" {
		if v, ok := m.Tag(tag); ok && v != "" {
			return v
		}
	}
	return def
}

// Split writes batch with write, one group of metrics per key that key gives a metric (in
// g, which is emptied again before Split returns: a batch belongs to the agent once Write
// returns), in the order the keys first appear, and adds up the outcomes as EachGroup does:
// a group refused as a whole is reported as exactly its metrics, a retryable outcome of any
// group is the whole batch's. It is the write of an output that routes by tags
// (database_tag, bucket_tag), with TagOr in key.
func Split[K comparable](g *Groups[K], batch []morse.Metric, key func(morse.Metric) K, write func(K, []morse.Metric) error) error {
	g.Reset()
	defer g.Reset()
	for _, m := range batch {
		g.Add(key(m), m)
	}
	return EachGroup(g.List(), len(batch), write)
}
