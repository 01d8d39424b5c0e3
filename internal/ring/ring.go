// Package ring is a fixed-capacity FIFO that evicts its oldest element when full, and takes
// elements back in front of the oldest (PushFront), as a batch that could not be written
// goes back to the head of an output's buffer. It is the store of batch's memory buffers.
// It knows nothing of metrics, and it is not safe for concurrent use: the owner holds the
// lock, which lets one lock cover the ring and the owner's counters together.
package ring

// Ring is a bounded FIFO queue of T.
type Ring[T any] struct {
	buf  []T
	head int // index of the oldest element
	n    int // number of elements held
}

// New returns an empty ring that holds at most capacity elements (at least one).
func New[T any](capacity int) *Ring[T] {
	if capacity < 1 {
		capacity = 1
	}
	return &Ring[T]{buf: make([]T, capacity)}
}

// Len is the number of elements held.
func (r *Ring[T]) Len() int { return r.n }

// Cap is the most elements the ring holds.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Push appends v as the newest element. When the ring is full the oldest element is evicted
// to make room, and Push reports true.
func (r *Ring[T]) Push(v T) (evicted bool) {
	if r.n == len(r.buf) {
		r.buf[r.head] = v
		r.head = r.next(r.head)
		return true
	}
	r.buf[r.index(r.n)] = v
	r.n++
	return false
}

// Slot makes room for a newest element and returns its slot, to fill in place: a zero T
// while the ring had room, and otherwise its oldest element, evicted to make room, which
// the caller may read before it overwrites it. It spares the copies of Push and Peek for a
// large T.
func (r *Ring[T]) Slot() *T {
	if r.n == len(r.buf) {
		p := &r.buf[r.head]
		r.head = r.next(r.head)
		return p
	}
	p := &r.buf[r.index(r.n)]
	r.n++
	return p
}

// PushAll appends vs in order and returns how many old elements were evicted.
func (r *Ring[T]) PushAll(vs []T) (evicted int) {
	for i := range vs {
		if r.Push(vs[i]) {
			evicted++
		}
	}
	return evicted
}

// PopFront removes up to max of the oldest elements and appends them to dst in order.
func (r *Ring[T]) PopFront(dst []T, max int) []T {
	var zero T
	popped := 0
	for ; max > 0 && r.n > 0; max-- {
		dst = append(dst, r.buf[r.head])
		// Clearing the slot lets the garbage collector reclaim what the element points to.
		r.buf[r.head] = zero
		r.head = r.next(r.head)
		r.n--
		popped++
	}
	r.settle(popped)
	return dst
}

// settle moves what is left after a pop of popped elements back to the first slots, when
// that costs no more than the pop did. A ring that an output's flushes keep nearly empty
// then uses only as many slots, and so only as many resident pages, as it holds at once.
// Left walking on through all its slots, it makes every page resident in turn: 2 MiB for
// 20,000 metric slots of 112 bytes, a page every few seconds and more after every burst,
// for an output that seldom holds more than a batch.
func (r *Ring[T]) settle(popped int) {
	switch {
	case r.n == 0:
		r.head = 0
	case r.head == 0 || r.n > popped || r.head+r.n > len(r.buf):
		// Nothing to gain, more to move than was popped, or the elements wrap round the
		// end, which only a backlog that walked the head round leaves; a later pop that
		// leaves little settles it.
	default:
		copy(r.buf[:r.n], r.buf[r.head:r.head+r.n])
		clear(r.buf[max(r.n, r.head) : r.head+r.n])
		r.head = 0
	}
}

// PushFront puts vs back in front of the oldest element, keeping their order, as when a
// batch that was taken out could not be written. If the ring cannot hold them all, the
// oldest elements overall are evicted, and those are the first of vs. It returns how many
// were evicted.
func (r *Ring[T]) PushFront(vs []T) (evicted int) {
	room := len(r.buf) - r.n
	if len(vs) > room {
		evicted = len(vs) - room
		vs = vs[evicted:]
	}
	for i := len(vs) - 1; i >= 0; i-- {
		r.head = r.prev(r.head)
		r.buf[r.head] = vs[i]
		r.n++
	}
	return evicted
}

// Peek returns the element at position i, 0 being the oldest.
func (r *Ring[T]) Peek(i int) T { return r.buf[r.index(i)] }

// At is the i-th oldest element in place, 0 being the oldest, for a reader that needs only
// part of a large T. It must be 0 <= i < Len, and the pointer is good until the next change.
func (r *Ring[T]) At(i int) *T { return &r.buf[r.index(i)] }

func (r *Ring[T]) index(i int) int {
	i += r.head
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

func (r *Ring[T]) next(i int) int {
	if i++; i == len(r.buf) {
		return 0
	}
	return i
}

func (r *Ring[T]) prev(i int) int {
	if i == 0 {
		return len(r.buf) - 1
	}
	return i - 1
}
