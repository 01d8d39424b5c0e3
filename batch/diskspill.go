package batch

import "github.com/morse-agent/morse"

// spilled is a metric the disk buffer keeps in memory because the disk refused it, with
// the time it arrived (for the age bound).
type spilled struct {
	m  morse.Metric
	at int64
}

// deque is a growable double-ended queue of spilled metrics, oldest first.
type deque struct {
	buf  []spilled
	head int
	n    int
}

func (d *deque) len() int { return d.n }

func (d *deque) at(i int) *spilled { return &d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) grow(n int) {
	if d.n+n <= len(d.buf) {
		return
	}
	buf := make([]spilled, max(2*len(d.buf), d.n+n, 64))
	for i := range d.n {
		buf[i] = *d.at(i)
	}
	d.buf, d.head = buf, 0
}

// pushBack appends vs as the newest.
func (d *deque) pushBack(vs ...spilled) {
	d.grow(len(vs))
	for _, v := range vs {
		d.n++
		*d.at(d.n - 1) = v
	}
}

// pushFront puts vs back in front, in their order.
func (d *deque) pushFront(vs []spilled) {
	d.grow(len(vs))
	for i := len(vs) - 1; i >= 0; i-- {
		d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
		d.n++
		*d.at(0) = vs[i]
	}
}

// popFront removes up to n of the oldest and appends them to dst, oldest first.
func (d *deque) popFront(dst []spilled, n int) []spilled {
	for ; n > 0 && d.n > 0; n-- {
		v := d.at(0)
		dst = append(dst, *v)
		*v = spilled{}
		d.head = (d.head + 1) % len(d.buf)
		d.n--
	}
	return dst
}

// popBack removes up to n of the newest and appends them to dst, oldest first.
func (d *deque) popBack(dst []spilled, n int) []spilled {
	n = min(n, d.n)
	start := len(dst)
	for i := d.n - n; i < d.n; i++ {
		dst = append(dst, *d.at(i))
		*d.at(i) = spilled{}
	}
	d.n -= n
	return dst[:start+n]
}

func metricsOf(dst []morse.Metric, vs []spilled) []morse.Metric {
	for _, v := range vs {
		dst = append(dst, v.m)
	}
	return dst
}
