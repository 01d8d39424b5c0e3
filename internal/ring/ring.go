// Package ring is a bounded FIFO that evicts its oldest element when full, and takes
// elements back in front of the oldest (PushFront), as a batch that could not be written
// goes back to the head of an output's buffer. It is the store of batch's memory buffers.
// It knows nothing of metrics, and it is not safe for concurrent use: the owner holds the
// lock, which lets one lock cover the ring and the owner's counters together.
//
// A ring's arrays start small and double as it fills, up to its capacity: an output whose
// flushes keep its buffer nearly empty holds a few hundred slots, not metric_buffer_limit's
// worth. Memory that is allocated counts as live to the garbage collector, whose goal is a
// multiple of the live heap, so slots allocated for a backlog that never comes cost the
// process their size several times over.
package ring

// Ring is a bounded FIFO queue of T, each element with a side value S kept in an array of
// its own. A memory buffer keeps each metric's size and time as S: its metric slots stay
// the size of a metric, and what reads only sizes, such as the sum of a batch's, walks a
// compact array rather than every metric. A ring with no side value takes struct{} as S,
// which costs nothing.
type Ring[T, S any] struct {
	buf  []T
	side []S // side[i] goes with buf[i]
	head int // index of the oldest element
	n    int // number of elements held
	max  int // the capacity: len(buf) grows up to it
}

// initialSlots is how many slots a ring allocates at first, unless its capacity is less.
const initialSlots = 256

// New returns an empty ring that holds at most capacity elements (at least one).
func New[T, S any](capacity int) *Ring[T, S] {
	capacity = max(capacity, 1)
	n := min(capacity, initialSlots)
	return &Ring[T, S]{buf: make([]T, n), side: make([]S, n), max: capacity}
}

// Len is the number of elements held.
func (r *Ring[T, S]) Len() int { return r.n }

// Cap is the most elements the ring holds.
func (r *Ring[T, S]) Cap() int { return r.max }

// Allocated is how many slots the ring has allocated so far, at most Cap.
func (r *Ring[T, S]) Allocated() int { return len(r.buf) }

// grow makes room for at least need elements in all, doubling the arrays up to the
// capacity, and moves the elements to the first slots in order.
func (r *Ring[T, S]) grow(need int) {
	size := len(r.buf)
	for size < need && size < r.max {
		size = min(2*size, r.max)
	}
	if size == len(r.buf) {
		return
	}
	buf, side := make([]T, size), make([]S, size)
	first := min(r.n, len(r.buf)-r.head) // the run up to the end of the old array
	copy(buf, r.buf[r.head:r.head+first])
	copy(buf[first:], r.buf[:r.n-first])
	copy(side, r.side[r.head:r.head+first])
	copy(side[first:], r.side[:r.n-first])
	r.buf, r.side, r.head = buf, side, 0
}

// Push appends v, with its side value s, as the newest element. When the ring is full the
// oldest element is evicted to make room, and Push reports true.
func (r *Ring[T, S]) Push(v T, s S) (evicted bool) {
	full := r.n == r.max
	p, q := r.Slot()
	*p, *q = v, s
	return full
}

// Slot makes room for a newest element and returns its slot and side slot, to fill in
// place: zero values while the ring had room, and otherwise its oldest element's, evicted
// to make room, which the caller may read before it overwrites them. It spares the copies
// of Push and Peek for a large T.
func (r *Ring[T, S]) Slot() (*T, *S) {
	if r.n == len(r.buf) && r.n < r.max {
		r.grow(r.n + 1)
	}
	i := r.head
	if r.n == len(r.buf) {
		r.head = r.next(r.head)
	} else {
		i = r.index(r.n)
		r.n++
	}
	return &r.buf[i], &r.side[i]
}

// PushAll appends vs with their side values ss, which must be as many, in order, and
// returns how many old elements were evicted.
func (r *Ring[T, S]) PushAll(vs []T, ss []S) (evicted int) {
	ss = ss[:len(vs)]
	for i := range vs {
		if r.Push(vs[i], ss[i]) {
			evicted++
		}
	}
	return evicted
}

// PopFront removes up to most of the oldest elements and appends them to dst, and their
// side values to sdst, in order.
func (r *Ring[T, S]) PopFront(dst []T, sdst []S, most int) ([]T, []S) {
	popped := min(max(most, 0), r.n)
	// At most two runs of slots: up to the end of the array, and on from its start.
	for k := popped; k > 0; {
		run := min(k, len(r.buf)-r.head)
		from, to := r.head, r.head+run
		dst, sdst = append(dst, r.buf[from:to]...), append(sdst, r.side[from:to]...)
		// Clearing the slots lets the garbage collector reclaim what the elements point to.
		clear(r.buf[from:to])
		clear(r.side[from:to])
		r.head, r.n, k = r.index(run), r.n-run, k-run
	}
	r.settle(popped)
	return dst, sdst
}

// settle moves what is left after a pop of popped elements back to the first slots, when
// that costs no more than the pop did. A ring that an output's flushes keep nearly empty
// then uses only as many slots, and so only as many resident pages, as it holds at once.
// Left walking on through all its slots, it makes every page resident in turn: 2 MiB for
// 20,000 metric slots of 112 bytes, a page every few seconds and more after every burst,
// for an output that seldom holds more than a batch.
func (r *Ring[T, S]) settle(popped int) {
	switch {
	case r.n == 0:
		r.head = 0
	case r.head == 0 || r.n > popped || r.head+r.n > len(r.buf):
		// Nothing to gain, more to move than was popped, or the elements wrap round the
		// end, which only a backlog that walked the head round leaves; a later pop that
		// leaves little settles it.
	default:
		from, to := r.head, r.head+r.n
		copy(r.buf[:r.n], r.buf[from:to])
		copy(r.side[:r.n], r.side[from:to])
		clear(r.buf[max(r.n, from):to])
		clear(r.side[max(r.n, from):to])
		r.head = 0
	}
}

// PushFront puts vs, with their side values ss, which must be as many, back in front of
// the oldest element, keeping their order, as when a batch that was taken out could not be
// written. If the ring cannot hold them all, the oldest elements overall are evicted, and
// those are the first of vs. It returns how many were evicted.
func (r *Ring[T, S]) PushFront(vs []T, ss []S) (evicted int) {
	ss = ss[:len(vs)]
	if r.n+len(vs) > len(r.buf) {
		r.grow(r.n + len(vs))
	}
	room := len(r.buf) - r.n
	if len(vs) > room {
		evicted = len(vs) - room
		vs, ss = vs[evicted:], ss[evicted:]
	}
	for i := len(vs) - 1; i >= 0; i-- {
		r.head = r.prev(r.head)
		r.buf[r.head], r.side[r.head] = vs[i], ss[i]
		r.n++
	}
	return evicted
}

// Peek returns the element at position i, 0 being the oldest.
func (r *Ring[T, S]) Peek(i int) T { return r.buf[r.index(i)] }

// At is the i-th oldest element in place, 0 being the oldest, for a reader that needs only
// part of a large T. It must be 0 <= i < Len, and the pointer is good until the next change.
func (r *Ring[T, S]) At(i int) *T { return &r.buf[r.index(i)] }

// Side is the side value of the i-th oldest element in place, as At is the element.
func (r *Ring[T, S]) Side(i int) *S { return &r.side[r.index(i)] }

func (r *Ring[T, S]) index(i int) int {
	i += r.head
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

func (r *Ring[T, S]) next(i int) int {
	if i++; i == len(r.buf) {
		return 0
	}
	return i
}

func (r *Ring[T, S]) prev(i int) int {
	if i == 0 {
		return len(r.buf) - 1
	}
	return i - 1
}
