package httpout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/morse-agent/morse"
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

// Post sends one request of an output to the first of n URLs that answers, by Do: send
// makes the request to URL i (see Send) and returns its answer. Post returns the answer
// and the index of the URL that gave it. When no URL answered, the error is retryable at
// once and names output and every URL's failure. When some URLs failed before one
// answered, log (the output's logger) is told at info, with name(i) for the URL that
// answered, without credentials, so that a failover is seen.
func Post[A any](ctx context.Context, f *Failover, output string, n int, name func(i int) string,
	log func() *slog.Logger, send func(i int) (A, error)) (A, int, error) {
	var answer A
	idx, failed := f.Do(ctx, n, func(i int) error {
		var err error
		answer, err = send(i)
		return err
	})
	if idx < 0 {
		return answer, -1, morse.Retryable(fmt.Errorf("%s: no URL answered: %w", output, failed), 0)
	}
	if failed != nil {
		log().Info("writing to another URL after a connection failure", "url", name(idx), "error", failed)
	}
	return answer, idx, nil
}

// Current is the index of the URL that answered last.
func (f *Failover) Current() int { return int(f.current.Load()) }

// Reset starts again at the first URL.
func (f *Failover) Reset() { f.current.Store(0) }
