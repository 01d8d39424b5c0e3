package batch

import (
	"context"
	"errors"
	"slices"

	"github.com/morse-agent/morse"
)

// isolateSender finds the metrics that made a sink refuse a whole request
// (*morse.RejectedError), so that one bad point never drops its batch-mates. When the sink
// names the offending metric, that one is dropped and the rest sent again: one extra request
// per bad metric. When it does not, the request is split in halves until each refused piece
// is one metric: about 2·log2(n) extra requests per bad metric. The outcome is a
// *morse.PartialWriteError listing exactly the dropped positions, by reason.
//
// A retryable failure during the search makes the whole batch retry, so the pieces already
// stored are written again; sinks that refuse whole requests are the ones that store
// nothing of them, so the cost is a repeat of stored points, never a loss.
type isolateSender struct {
	next sender
}

func (s *isolateSender) send(ctx context.Context, batch []morse.Metric) error {
	err := s.next.send(ctx, batch)
	var rej *morse.RejectedError
	if !errors.As(err, &rej) {
		return err
	}
	iso := isolation{next: s.next, batch: batch, drops: map[string]*morse.PartialWriteError{}}
	pos := make([]int, len(batch))
	for i := range pos {
		pos[i] = i
	}
	if err := iso.refused(ctx, pos, rej); err != nil {
		return err
	}
	return iso.result()
}

// isolation is one search for the offending metrics of a batch.
type isolation struct {
	next   sender
	batch  []morse.Metric
	drops  map[string]*morse.PartialWriteError // by reason
	order  []string                            // reasons in the order first seen
	buf    []morse.Metric
	extras int // requests beyond the first, for tests and logs
}

// try sends the metrics at positions pos as one request and books the outcome. It returns
// an error only when the search must stop and the batch be retried.
func (iso *isolation) try(ctx context.Context, pos []int) error {
	if len(pos) == 0 {
		return nil
	}
	iso.extras++
	iso.buf = iso.buf[:0]
	for _, p := range pos {
		iso.buf = append(iso.buf, iso.batch[p])
	}
	err := iso.next.send(ctx, iso.buf)
	var rej *morse.RejectedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rej):
		return iso.refused(ctx, pos, rej)
	case morse.Classify(err) == morse.OutcomeRetry:
		return err
	case morse.Classify(err) == morse.OutcomePartial:
		iso.partial(pos, err)
		return nil
	default: // refused as a whole for a reason no metric causes: all of these go
		iso.drop(permanentReason(err), err, pos...)
		return nil
	}
}

// refused handles a request of the metrics at pos that the sink refused because of some of
// them.
func (iso *isolation) refused(ctx context.Context, pos []int, rej *morse.RejectedError) error {
	if rej.Index >= 0 && rej.Index < len(pos) {
		iso.drop(rej.Reason, rej, pos[rej.Index])
		return iso.try(ctx, slices.Delete(slices.Clone(pos), rej.Index, rej.Index+1))
	}
	return iso.bisect(ctx, pos, rej)
}

// bisect searches the metrics at pos, which the sink refused as a whole, by halves. When
// the first half goes through untouched, the fault is in the second, which is then split
// at once instead of being sent whole: about log2(n) requests fewer per bad metric.
func (iso *isolation) bisect(ctx context.Context, pos []int, rej *morse.RejectedError) error {
	if len(pos) == 1 {
		iso.drop(rej.Reason, rej, pos[0])
		return nil
	}
	h := len(pos) / 2
	before := iso.dropped()
	if err := iso.try(ctx, pos[:h]); err != nil {
		return err
	}
	if iso.dropped() == before {
		return iso.bisect(ctx, pos[h:], rej)
	}
	return iso.try(ctx, pos[h:])
}

// dropped is how many metrics the search has dropped so far.
func (iso *isolation) dropped() int {
	n := 0
	for _, d := range iso.drops {
		n += len(d.Indices)
	}
	return n
}

// partial books a piece the sink partly stored. Positions it names are exact; when it says
// only how many, the first of the piece are counted, which keeps the count exact.
func (iso *isolation) partial(pos []int, err error) {
	pw := asPartial(err)
	var parts []*morse.PartialWriteError
	parts = append(parts, pw)
	parts = append(parts, pw.More...)
	for _, p := range parts {
		if len(p.Indices) > 0 {
			for _, i := range p.Indices {
				if i >= 0 && i < len(pos) {
					iso.drop(reasonOr(p.Reason), err, pos[i])
				}
			}
			continue
		}
		_, n := p.Split(len(pos))
		iso.drop(reasonOr(p.Reason), err, pos[:n]...)
	}
}

func (iso *isolation) drop(reason string, err error, pos ...int) {
	reason = reasonOr(reason)
	d, ok := iso.drops[reason]
	if !ok {
		d = &morse.PartialWriteError{Reason: reason, Err: err}
		iso.drops[reason] = d
		iso.order = append(iso.order, reason)
	}
	d.Indices = append(d.Indices, pos...)
	d.Dropped = len(d.Indices)
}

// result is the outcome of the whole batch: nil when nothing had to be dropped after all,
// else a partial write listing every dropped position by reason.
func (iso *isolation) result() error {
	if len(iso.order) == 0 {
		return nil
	}
	first := iso.drops[iso.order[0]]
	for _, r := range iso.order[1:] {
		first.More = append(first.More, iso.drops[r])
	}
	return first
}
