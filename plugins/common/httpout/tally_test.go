package httpout

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func TestTally(t *testing.T) {
	perm := func(reason string) error { return morse.Permanent(reason, errors.New(reason)) }
	part := func(reason string, n int) error {
		return &morse.PartialWriteError{Dropped: n, Reason: reason, Err: errors.New(reason)}
	}
	type piece struct {
		err error
		n   int
	}
	for _, tc := range []struct {
		name    string
		pieces  []piece
		n       int
		dropped int
		written int
		reason  string
		whole   bool // the piece's own error comes back
	}{
		{"all stored", []piece{{nil, 5}, {nil, 5}}, 10, 0, 0, "", false},
		{"one piece, whole batch", []piece{{perm("x"), 10}}, 10, 10, 0, "x", true},
		{"one partial, whole batch", []piece{{part("p", 2), 10}}, 10, 2, 0, "p", true},
		{"one piece of two", []piece{{nil, 6}, {perm("x"), 4}}, 10, 4, 6, "x", false},
		{"every reason its own part, the first seen first", []piece{{perm("a"), 2}, {part("b", 3), 8}}, 10, 5, 5, "a", false},
		{"retryable ignored", []piece{{morse.Retryable(errors.New("r"), 0), 5}, {perm("x"), 5}}, 10, 5, 5, "x", false},
		{"partial capped at its piece", []piece{{part("p", 99), 3}, {nil, 7}}, 10, 3, 7, "p", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl Tally
			for _, p := range tc.pieces {
				tl.Add(p.err, p.n)
			}
			require.Equal(t, tc.dropped, tl.Dropped())
			err := tl.Err(tc.n)
			if tc.dropped == 0 {
				require.NoError(t, err)
				return
			}
			if tc.whole {
				require.Same(t, tc.pieces[0].err, err)
				return
			}
			var pw *morse.PartialWriteError
			require.True(t, errors.As(err, &pw), "%v", err)
			written, dropped := pw.Split(tc.n)
			require.Equal(t, tc.dropped, dropped)
			require.Equal(t, tc.written, written)
			require.Equal(t, tc.written, pw.Written)
			require.Equal(t, tc.reason, pw.Reason)
		})
	}
}

// A batch split twice reads as one list of the servers' errors, not nested partial writes.
func TestTallyFlattens(t *testing.T) {
	var inner Tally
	inner.Add(morse.Permanent("a", errors.New("first")), 1)
	inner.Add(morse.Permanent("a", errors.New("second")), 1)
	var outer Tally
	outer.Add(inner.Err(4), 4)
	outer.Add(morse.Permanent("b", errors.New("third")), 1)
	err := outer.Err(5)
	require.Equal(t, "partial write: 2 written, 2 dropped (a): first\nsecond\nthird", fmt.Sprint(err))
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Len(t, pw.More, 1, "b is a part of its own")
	require.Equal(t, "b", pw.More[0].Reason)
	_, dropped := pw.Split(5)
	require.Equal(t, 3, dropped)
}

// TestTallyKnowsPositions: pieces refused as a whole at known positions give a partial
// write that lists them, by reason; one drop at an unknown position makes the whole write
// give counts only, still exact by reason.
func TestTallyKnowsPositions(t *testing.T) {
	var tl Tally
	tl.AddAt(morse.Permanent("db", errors.New("database not found")), []int{1, 3})
	tl.AddAt(nil, []int{0, 2})
	tl.AddAt(&morse.PartialWriteError{Indices: []int{1}, Reason: "conflict", Err: errors.New("c")}, []int{4, 5})
	pw, ok := errors.AsType[*morse.PartialWriteError](tl.Err(6))
	require.True(t, ok)
	require.Equal(t, []int{1, 3}, pw.Indices)
	require.Equal(t, "db", pw.Reason)
	require.Len(t, pw.More, 1)
	require.Equal(t, []int{5}, pw.More[0].Indices)

	tl.Add(&morse.PartialWriteError{Dropped: 1, Reason: "conflict", Err: errors.New("c")}, 3)
	pw, _ = errors.AsType[*morse.PartialWriteError](tl.Err(9))
	require.Nil(t, pw.Indices, "one part at unknown positions: counts only")
	require.Equal(t, 2, pw.Dropped)
	require.Equal(t, 2, pw.More[0].Dropped)
	_, dropped := pw.Split(9)
	require.Equal(t, 4, dropped)
}

// Halves writes both halves in order and adds them up; a retryable half stops at once.
func TestHalves(t *testing.T) {
	batch := make([]morse.Metric, 5)
	var sizes []int
	err := Halves(batch, func(half []morse.Metric) error {
		sizes = append(sizes, len(half))
		if len(sizes) == 2 {
			return morse.Permanent("x", errors.New("second half"))
		}
		return nil
	})
	require.Equal(t, []int{2, 3}, sizes)
	var pw *morse.PartialWriteError
	require.True(t, errors.As(err, &pw), "%v", err)
	require.Equal(t, 3, pw.Dropped)
	require.Equal(t, 2, pw.Written)

	sizes = nil
	retry := morse.Retryable(errors.New("busy"), 0)
	err = Halves(batch, func(half []morse.Metric) error {
		sizes = append(sizes, len(half))
		return retry
	})
	require.Same(t, retry, err)
	require.Equal(t, []int{2}, sizes, "the second half is not written")
}

// TestRejectedPieceDecidesTheBatch: a piece refused because of some of its lines is handed
// back for the whole batch, the line it names made a position in the batch, so that the
// batch writer searches it; a refusal naming no line is handed back as it is.
func TestRejectedPieceDecidesTheBatch(t *testing.T) {
	ms := make([]morse.Metric, 6)
	groups := []Group[string]{
		{Key: "a", Metrics: ms[:2], Positions: []int{0, 3}},
		{Key: "b", Metrics: ms[2:], Positions: []int{1, 2, 4, 5}},
	}
	rejected := errors.New("unable to parse")
	err := EachGroup(groups, len(ms), func(key string, _ []morse.Metric) error {
		if key == "b" {
			return &morse.RejectedError{Index: 2, Reason: morse.ReasonUnableToParse, Err: rejected}
		}
		return nil
	})
	var rej *morse.RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, 4, rej.Index, "the third metric of group b is the batch's fifth")
	err = Halves(ms, func(half []morse.Metric) error {
		return &morse.RejectedError{Index: -1, Err: rejected}
	})
	require.ErrorAs(t, err, &rej)
	require.Equal(t, -1, rej.Index)
}

// TestReasons: one part per reason in the order the reasons first come, each with its count
// and the positions that were given; nothing dropped, no parts.
func TestReasons(t *testing.T) {
	var r Reasons
	require.Nil(t, r.Parts())
	conflict := errors.New("conflict")
	r.Drop(morse.ReasonFieldTypeConflict, 4).Err = conflict
	r.Drop(morse.ReasonUnableToParse, 1)
	r.Drop(morse.ReasonFieldTypeConflict, 0)
	r.Drop(morse.ReasonUnableToParse, -1)
	parts := r.Parts()
	require.Len(t, parts, 2)
	require.Equal(t, []*morse.PartialWriteError{parts[1]}, parts[0].More, "the first part heads the others")
	require.Equal(t, morse.ReasonFieldTypeConflict, parts[0].Reason)
	require.Equal(t, 2, parts[0].Dropped)
	require.Equal(t, []int{4, 0}, parts[0].Indices)
	require.Equal(t, conflict, parts[0].Err)
	require.Equal(t, morse.ReasonUnableToParse, parts[1].Reason)
	require.Equal(t, 2, parts[1].Dropped, "a position not known is still counted")
	require.Equal(t, []int{1}, parts[1].Indices)
	require.Equal(t, morse.OutcomePartial, morse.Classify(parts[0]))
}
