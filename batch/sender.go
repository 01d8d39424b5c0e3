package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/backoff"
)

// sender is one stage of the chain a batch goes through on its way to the sink. The writer
// builds it as retry → isolate → timeout → output: the retry stage decides how long to wait
// after a failure, the isolate stage finds the metrics that made a sink refuse a whole
// request, the timeout stage bounds each attempt, and the output stage connects and writes.
// Each stage may be called by several flights at once.
type sender interface {
	send(ctx context.Context, batch []morse.Metric) error
}

// outputSender connects the output once, lazily, and writes to it.
type outputSender struct {
	out morse.Output

	mu        sync.Mutex
	connected bool
}

func (s *outputSender) send(ctx context.Context, batch []morse.Metric) error {
	if err := s.connect(ctx); err != nil {
		return err
	}
	p := probeOf(ctx)
	sent := ctx.Err() == nil // a Write that starts cancelled sends nothing
	if sent {
		p.sent()
	}
	err := s.out.Write(ctx, batch)
	if sent {
		p.returned(err != nil && ctx.Err() != nil)
	}
	return err
}

// flightProbe tells, for one batch in flight, whether the sink may hold it although no
// answer said so: the output's Write was entered (the request may be on the wire) and it
// has not returned, or it returned because its context ended rather than with the sink's
// answer. Shutdown reports such a batch under morse.ReasonUnknown rather than as surely
// lost. The flusher hands one to each flight through the context.
type flightProbe struct{ state atomic.Int32 }

const (
	probeIdle       int32 = iota // Write not entered
	probeSent                    // Write entered, not returned
	probeAnswered                // Write returned with the sink's answer, or its own error
	probeUnanswered              // Write returned because its context ended: no answer
)

type probeKey struct{}

// withProbe gives the sends made with ctx the probe p.
func withProbe(ctx context.Context, p *flightProbe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

func probeOf(ctx context.Context) *flightProbe {
	p, _ := ctx.Value(probeKey{}).(*flightProbe)
	return p
}

func (p *flightProbe) sent() {
	if p != nil && p.state.Load() != probeUnanswered {
		p.state.Store(probeSent)
	}
}

func (p *flightProbe) returned(unanswered bool) {
	switch {
	case p == nil:
	case unanswered:
		p.state.Store(probeUnanswered)
	case p.state.Load() != probeUnanswered: // one unanswered request leaves the batch in doubt
		p.state.Store(probeAnswered)
	}
}

// unknown reports whether the sink may hold the batch without having said so.
func (p *flightProbe) unknown() bool {
	st := p.state.Load()
	return st == probeSent || st == probeUnanswered
}

// connect connects the output until it succeeds once; until then every attempt tries again,
// so a sink that is down at start loses nothing.
func (s *outputSender) connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.connected {
		return nil
	}
	if err := s.out.Connect(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	s.connected = true
	return nil
}

// ErrWriteTimeout is wrapped by the error of an attempt that ran past Options.WriteTimeout.
// It is retryable: the batch goes back to the buffer and is tried again.
var ErrWriteTimeout = errors.New("write attempt timed out")

// timeoutSender bounds each attempt. The output's Write gets a context that ends at the
// deadline and must return soon after; the attempt then counts as a retryable failure.
type timeoutSender struct {
	next    sender
	timeout time.Duration
}

func (s *timeoutSender) send(ctx context.Context, batch []morse.Metric) error {
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.next.send(actx, batch)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return morse.Retryable(fmt.Errorf("%w after %s: %w", ErrWriteTimeout, s.timeout, err), 0)
	}
	return err
}

// retryError is a retryable failure with the wait the retry stage chose before the next
// attempt.
type retryError struct {
	err   error
	delay time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// retrySender keeps the backoff of a failing sink. It never retries by itself: the batch
// goes back to the buffer, so that eviction can still take the oldest metrics while the sink
// is down, and the flush loop waits the delay this stage chose. It honours a server's
// Retry-After, and retries never end on their own.
//
// Retry limits, off by default, end that for a batch that has failed too long: see
// retryage.go.
type retrySender struct {
	next                 sender
	maxAge, unauthMaxAge time.Duration // 0: no limit

	mu     sync.Mutex
	policy *backoff.Policy
	ages   retryAges
}

func (s *retrySender) send(ctx context.Context, batch []morse.Metric) error {
	err := s.next.send(ctx, batch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if morse.Classify(err) != morse.OutcomeRetry {
		s.policy.Reset()
		s.ages.forget(batch)
		return err
	}
	if expired := s.ages.failed(batch, err, time.Now(), s.maxAge, s.unauthMaxAge); expired != nil {
		return expired
	}
	return &retryError{err: err, delay: s.delayLocked(err)}
}

// delayLocked is the server's Retry-After when it gave one, else the next backoff step.
func (s *retrySender) delayLocked(err error) time.Duration {
	d := s.policy.Next() // a server that asks for patience still counts as a failure
	var re *morse.RetryableError
	if errors.As(err, &re) && re.RetryAfter > 0 {
		return re.RetryAfter
	}
	return d
}

// attempts is how many attempts in a row have failed.
func (s *retrySender) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy.Attempts()
}

// retryDelay returns the wait chosen for a failed send, or the first backoff step for an
// error that did not pass the retry stage.
func retryDelay(err error) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return re.delay
	}
	return DefaultRetryInitial
}
