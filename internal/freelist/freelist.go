// Package freelist keeps a bounded number of reusable objects for as long as the process
// runs.
//
// sync.Pool is the usual home for per-request scratch, but it empties itself over every two
// garbage collections. An agent under steady load collects about once a second, so its
// request buffers (a listener's 64 KiB read chunk and its batch of 1000 metrics, an
// output's request body of 100 KiB and more) were dropped and made again every few
// seconds, a body growing through a run of large allocations each time. In the churn soak
// (bench/churn) that was about 0.1 MB a second of allocations of 16 KiB or more,
// all gone with a List. A List keeps up to Max objects across collections; an object
// that grew past what should be kept for good is simply not put back, and a list never
// holds more objects than were in use at once.
package freelist

import (
	"cmp"
	"sync"
)

// List is a LIFO of up to Max objects. The zero value is ready: it keeps up to DefaultMax
// objects made with new(T). It is safe for concurrent use.
type List[T any] struct {
	// New makes an object when the list is empty; nil makes new(T).
	New func() *T
	// Max is how many objects the list keeps; 0 is DefaultMax.
	Max int

	mu    sync.Mutex
	items []*T
}

// Get returns a kept object, or a new one.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	if n := len(l.items); n > 0 {
		x := l.items[n-1]
		l.items[n-1] = nil
		l.items = l.items[:n-1]
		l.mu.Unlock()
		return x
	}
	l.mu.Unlock()
	if l.New != nil {
		return l.New()
	}
	return new(T)
}

// DefaultMax is how many objects a List with no Max keeps: as many as an output has writes
// in flight by default.
const DefaultMax = 4

// Put keeps x for a later Get, unless the list already holds Max objects.
func (l *List[T]) Put(x *T) {
	l.mu.Lock()
	if len(l.items) < cmp.Or(l.Max, DefaultMax) {
		l.items = append(l.items, x)
	}
	l.mu.Unlock()
}

// Len is how many objects the list holds.
func (l *List[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}
