package httpout

import (
	"context"
	"errors"
	"sync/atomic"
)

// Failover remembers which of several URLs answered last, so that writes start there. The
// zero value starts at the first URL; it is safe for concurrent use.
type Failover struct{ current atomic.Int32 }

// Do calls try with the index of each of n URLs in turn, starting at the one that answered
// last, until one answers (try returns nil) or ctx ends. try's error is a transport error:
// refused, reset, timed out. Do returns the index that answered and the errors of the URLs
// tried before it (nil when the first answered), or -1 and every error when none did. The
// first URL that answers decides: a server that refused a write must not see it elsewhere.
func (f *Failover) Do(ctx context.Context, n int, try func(i int) error) (int, error) {
	var errs []error
	current := int(f.current.Load())
	for k := range n {
		i := (current + k) % n
		err := try(i)
		if err == nil {
			if i != current {
				f.current.CompareAndSwap(int32(current), int32(i))
			}
			return i, errors.Join(errs...)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return -1, errors.Join(errs...)
}

// Current is the index of the URL that answered last.
func (f *Failover) Current() int { return int(f.current.Load()) }

// Reset starts again at the first URL.
func (f *Failover) Reset() { f.current.Store(0) }
