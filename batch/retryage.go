package batch

import (
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/morse-agent/morse"
)

// Retry limits (Options.RetryMaxAge, Options.UnauthorizedRetryMaxAge) are kept per batch. A
// failed batch goes back to the head of the buffer and the next attempt takes it from there
// again, so a batch is known by its first metric; a batch whose head was evicted in the
// meantime is a new batch. For each failing batch the retry stage keeps when it first failed,
// and when its current run of unauthorized failures began. An unauthorized failure is held
// to UnauthorizedRetryMaxAge over that run, when set; any other failure, and an unauthorized
// one without its own limit, to RetryMaxAge since the batch first failed. The ages live in
// memory: a restart starts them again, for the batches a disk buffer kept. A disk buffer that
// drains newest first puts a failed batch back under the metrics that arrived meanwhile, so
// each attempt takes a new batch while they keep arriving, and the limit is reached only by
// a batch attempted that long: there the limits bound little.

// maxTrackedBatches bounds the ages kept: more batches than that failing at once (there are
// at most as many as writes in flight) means heads were evicted, and their ages can go.
const maxTrackedBatches = 256

// batchAge is what the retry stage knows of one failing batch.
type batchAge struct {
	since       time.Time // its first failure
	unauthSince time.Time // the first of its current run of unauthorized failures; zero if none
	last        time.Time // its last failure
}

// retryAges holds the ages of the failing batches. Its zero value is ready; the caller
// serialises access.
type retryAges struct {
	seed maphash.Seed
	ages map[uint64]*batchAge
}

// key identifies a batch by its first metric: its text and time for a line metric, else its
// name, tags and time.
func (r *retryAges) key(batch []morse.Metric) uint64 {
	if r.ages == nil {
		r.seed, r.ages = maphash.MakeSeed(), map[uint64]*batchAge{}
	}
	var h maphash.Hash
	h.SetSeed(r.seed)
	m := batch[0]
	if lt, ok := m.Line(); ok {
		h.WriteString(lt.Text)
	} else {
		h.WriteString(m.Name())
		for _, t := range m.Tags() {
			h.WriteByte(0)
			h.WriteString(t.Key)
			h.WriteByte(0)
			h.WriteString(t.Value)
		}
	}
	var ns [8]byte
	t := uint64(m.Time().UnixNano())
	for i := range ns {
		ns[i] = byte(t >> (8 * i))
	}
	h.Write(ns[:])
	return h.Sum64()
}

// forget drops the age of a batch that no longer fails.
func (r *retryAges) forget(batch []morse.Metric) {
	if len(batch) > 0 && len(r.ages) > 0 {
		delete(r.ages, r.key(batch))
	}
}

// failed records a retryable failure of batch at now and returns the error that drops it
// under morse.ReasonRetryExpired when it is past its limit, or nil.
func (r *retryAges) failed(batch []morse.Metric, err error, now time.Time, maxAge, unauthMaxAge time.Duration) error {
	if maxAge <= 0 && unauthMaxAge <= 0 || len(batch) == 0 {
		return nil
	}
	k := r.key(batch)
	a := r.ages[k]
	if a == nil {
		r.makeRoom()
		a = &batchAge{since: now}
		r.ages[k] = a
	}
	a.last = now
	limit, age := maxAge, now.Sub(a.since)
	if errors.Is(err, morse.ErrUnauthorized) {
		if a.unauthSince.IsZero() {
			a.unauthSince = now
		}
		if unauthMaxAge > 0 {
			limit, age = unauthMaxAge, now.Sub(a.unauthSince)
		}
	} else {
		a.unauthSince = time.Time{}
	}
	if limit <= 0 || age < limit {
		return nil
	}
	delete(r.ages, k)
	return morse.Permanent(morse.ReasonRetryExpired,
		fmt.Errorf("retried for %s, past the limit of %s: %w", age.Round(time.Second), limit, err))
}

// makeRoom forgets the batch that failed longest ago when the ages are full.
func (r *retryAges) makeRoom() {
	if len(r.ages) < maxTrackedBatches {
		return
	}
	var oldest uint64
	var at time.Time
	for k, a := range r.ages {
		if at.IsZero() || a.last.Before(at) {
			oldest, at = k, a.last
		}
	}
	delete(r.ages, oldest)
}
