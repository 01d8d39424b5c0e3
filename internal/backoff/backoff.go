// Package backoff computes retry delays: exponential growth with full jitter, as described in
// AWS's "Exponential Backoff And Jitter". Full jitter spreads the retries of many agents that
// failed together, so that a recovering server is not hit by all of them at once.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff with full jitter. The zero value is not useful; use New.
type Policy struct {
	Initial time.Duration
	Max     time.Duration
	// Rand returns a number in [0, 1). It is replaceable so tests can pin the jitter.
	Rand func() float64

	attempt int
}

// New returns a policy starting at initial and capped at max.
func New(initial, max time.Duration) *Policy {
	return &Policy{Initial: initial, Max: max, Rand: rand.Float64}
}

// Ceiling is the largest delay the next attempt may get: Initial doubled once per failure so
// far, capped at Max.
func (p *Policy) Ceiling() time.Duration {
	d := p.Initial
	for i := 0; i < p.attempt && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Next returns the delay before the next attempt, drawn uniformly from [0, Ceiling()], and
// counts one more failure.
func (p *Policy) Next() time.Duration {
	c := p.Ceiling()
	p.attempt++
	return time.Duration(p.Rand() * float64(c))
}

// Attempts is the number of failures since the last Reset.
func (p *Policy) Attempts() int { return p.attempt }

// Reset starts again from Initial, after a success.
func (p *Policy) Reset() { p.attempt = 0 }
