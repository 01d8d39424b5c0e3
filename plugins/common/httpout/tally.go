package httpout

import (
	"errors"

	"github.com/morse-agent/morse"
)

// Tally books the outcome of each piece. The zero value is ready. A retryable outcome is
// never booked: the caller returns it for the whole batch at once.
//
// Drops are kept by reason, so a batch whose pieces were refused for different reasons is
// reported with one part per reason (morse.PartialWriteError.More), each counted exactly.
// Where every drop of a reason was of whole pieces at known positions (AddAt), that part
// lists the positions, and the batch writer reports exactly those metrics.
type Tally struct {
	parts  []*part // by reason, in the order first seen
	errs   []error
	whole  error // the only error, when it covered its whole piece
	pieceN int
}

// part is the drops of one reason.
type part struct {
	reason  string
	dropped int
	idx     []int
	inexact bool // some drops of this reason are at unknown positions
}

// Add books the outcome of one piece of n metrics at unknown positions: nil, a partial
// write or a permanent error. A retryable error is ignored.
func (t *Tally) Add(err error, n int) { t.add(err, n, nil) }

// AddAt books the outcome of the piece at positions idx of the batch, such as the group of a
// routed batch. A piece refused as a whole drops exactly those metrics; a partial write
// within it drops the positions it lists, or unknown ones.
func (t *Tally) AddAt(err error, idx []int) { t.add(err, len(idx), idx) }

func (t *Tally) add(err error, n int, idx []int) {
	if err == nil || n == 0 {
		return
	}
	switch morse.Classify(err) {
	case morse.OutcomePartial:
		pw, _ := errors.AsType[*morse.PartialWriteError](err)
		for _, p := range append([]*morse.PartialWriteError{pw}, pw.More...) {
			switch {
			case len(p.Indices) > 0 && idx != nil:
				t.book(p.Reason, len(p.Indices), pick(idx, p.Indices))
			default:
				t.book(p.Reason, min(max(p.Dropped, len(p.Indices)), n), nil)
			}
		}
	case morse.OutcomeDropped:
		pe, _ := errors.AsType[*morse.PermanentError](err)
		t.book(pe.Reason, n, idx)
	default:
		return
	}
	t.errs = append(t.errs, leaves(err)...)
	t.whole, t.pieceN = err, n
}

// book adds n drops of reason, at positions idx when they are known (nil when not).
func (t *Tally) book(reason string, n int, idx []int) {
	var p *part
	for _, q := range t.parts {
		if q.reason == reason {
			p = q
		}
	}
	if p == nil {
		p = &part{reason: reason}
		t.parts = append(t.parts, p)
	}
	p.dropped += n
	if idx == nil {
		p.inexact = true
	} else {
		p.idx = append(p.idx, idx...)
	}
}

func pick(idx, at []int) []int {
	out := make([]int, 0, len(at))
	for _, i := range at {
		if i >= 0 && i < len(idx) {
			out = append(out, idx[i])
		}
	}
	return out
}

// Dropped is how many metrics the pieces booked so far dropped.
func (t *Tally) Dropped() int {
	n := 0
	for _, p := range t.parts {
		n += p.dropped
	}
	return n
}

// leaves unwraps the errors that a Tally made, so that a batch split several times does not
// read "partial write: partial write: ...".
func leaves(err error) []error {
	var pw *morse.PartialWriteError
	if errors.As(err, &pw) && pw.Err != nil {
		if joined, ok := pw.Err.(interface{ Unwrap() []error }); ok {
			return joined.Unwrap()
		}
	}
	return []error{err}
}

// Err is the outcome of the whole batch of n metrics: nil when nothing was dropped; the
// piece's own error when a single piece covered the whole batch; otherwise a partial write
// with one part per reason. Positions are given only when every part knows all of its own,
// since the batch writer reads them for the whole write.
func (t *Tally) Err(n int) error {
	dropped := t.Dropped()
	switch {
	case dropped == 0:
		return nil
	case len(t.errs) == 1 && t.pieceN == n:
		return t.whole
	}
	exact := true
	for _, p := range t.parts {
		exact = exact && !p.inexact
	}
	var head *morse.PartialWriteError
	for _, p := range t.parts {
		pw := &morse.PartialWriteError{Dropped: p.dropped, Reason: p.reason}
		if exact {
			pw.Indices = p.idx
		}
		if head == nil {
			head = pw
			continue
		}
		head.More = append(head.More, pw)
	}
	head.Err = errors.Join(t.errs...)
	head.Written = max(0, n-dropped)
	return head
}

// Each writes every piece of a batch with write, in order, and adds up the outcomes, so that
// a piece refused as a whole is reported as exactly its metrics. A retryable outcome of any
// piece is returned at once, for the whole batch; so is a piece refused because of some of
// its lines (morse.RejectedError), with the line it names made a position in the batch, so
// that the batch writer searches the whole batch, and the good metrics of that piece are not
// dropped with the bad.
func Each(pieces [][]morse.Metric, write func([]morse.Metric) error) error {
	var t Tally
	n := 0
	for _, p := range pieces {
		if err := t.settle(write(p), span(n, len(p))); err != nil {
			return err
		}
		n += len(p)
	}
	return t.Err(n)
}

// EachGroup writes every group of a routed batch of n metrics with write, in order, and
// adds up the outcomes with the groups' positions, as Each does.
func EachGroup[K comparable](groups []Group[K], n int, write func(K, []morse.Metric) error) error {
	var t Tally
	for _, g := range groups {
		if err := t.settle(write(g.Key, g.Metrics), g.Positions); err != nil {
			return err
		}
	}
	return t.Err(n)
}

// settle books err, the outcome of the piece at positions pos, or returns the error that
// decides the whole batch at once: a retryable one, or a *morse.RejectedError with the index
// it names made a position in the batch.
func (t *Tally) settle(err error, pos []int) error {
	if morse.Classify(err) == morse.OutcomeRetry {
		return err
	}
	if rej, ok := errors.AsType[*morse.RejectedError](err); ok {
		if rej.Index >= 0 && rej.Index < len(pos) {
			return &morse.RejectedError{Index: pos[rej.Index], Reason: rej.Reason, Err: rej.Err}
		}
		return err
	}
	t.AddAt(err, pos)
	return nil
}

// span is the positions from..from+n.
func span(from, n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = from + i
	}
	return idx
}

// Halves is Each for the two halves of metrics, for a server that refused them all at once.
func Halves(metrics []morse.Metric, write func([]morse.Metric) error) error {
	h := len(metrics) / 2
	return Each([][]morse.Metric{metrics[:h], metrics[h:]}, write)
}

// Reasons builds the partial write of a batch whose metrics a server refused one at a time,
// each for a reason of its own: one part per reason, in the order the reasons first come
// (morse.PartialWriteError.More), each with its count and, where known, the positions. The
// zero value is ready.
type Reasons struct {
	head  *morse.PartialWriteError
	parts map[string]*morse.PartialWriteError
}

// Drop counts one metric dropped for reason, at position i of the batch when i >= 0 (at an
// unknown one otherwise), and returns the part of reason, whose Err is the caller's to set.
func (r *Reasons) Drop(reason string, i int) *morse.PartialWriteError {
	p := r.parts[reason]
	if p == nil {
		if r.parts == nil {
			r.parts = map[string]*morse.PartialWriteError{}
		}
		p = &morse.PartialWriteError{Reason: reason}
		r.parts[reason] = p
		if r.head == nil {
			r.head = p
		} else {
			r.head.More = append(r.head.More, p)
		}
	}
	p.Dropped++
	if i >= 0 {
		p.Indices = append(p.Indices, i)
	}
	return p
}

// Parts is the parts made so far, the first reason's first; nil when no metric was
// dropped. The first part heads the others: it is the partial write of the batch.
func (r *Reasons) Parts() []*morse.PartialWriteError {
	if r.head == nil {
		return nil
	}
	return append([]*morse.PartialWriteError{r.head}, r.head.More...)
}
