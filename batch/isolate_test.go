package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// wholeRequestSink refuses any request that holds a bad metric, storing none of it, as
// QuestDB does over HTTP. With names set it says which metric, by its position in the
// request; otherwise it does not.
type wholeRequestSink struct {
	testutil.ScriptOutput
	bad   map[int]bool // sequence numbers of the bad metrics
	names bool

	mu       sync.Mutex
	requests int
	stored   []int
}

func (s *wholeRequestSink) Write(_ context.Context, batch []morse.Metric) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	for i, seq := range testutil.Seqs(batch) {
		if s.bad[seq] {
			idx := -1
			if s.names {
				idx = i
			}
			return &morse.RejectedError{Index: idx, Reason: morse.ReasonFieldTypeConflict, Err: fmt.Errorf("cast error in line %d", i+1)}
		}
	}
	s.stored = append(s.stored, testutil.Seqs(batch)...)
	return nil
}

// TestOneBadPointNeverDropsItsBatchMates: a batch of 1000 with 1, 3 and 17 bad metrics at
// random places, against a sink that refuses whole requests: everything good arrives once,
// only the bad metrics are dropped and reported, and the extra requests stay within
// 2·log2(1000) per bad metric by bisection, or one per bad metric when the sink names it.
func TestOneBadPointNeverDropsItsBatchMates(t *testing.T) {
	for _, names := range []bool{false, true} {
		for _, nbad := range []int{1, 3, 17} {
			t.Run(fmt.Sprintf("bad=%d/named=%v", nbad, names), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(nbad), 7))
				bad := map[int]bool{}
				for len(bad) < nbad {
					bad[r.IntN(1000)] = true
				}
				sink := &wholeRequestSink{bad: bad, names: names}
				s := &isolateSender{next: &outputSender{out: sink}}
				batch := testutil.SeqMetrics(0, 1000)
				err := s.send(context.Background(), batch)

				var want, good []int
				for i := range 1000 {
					if bad[i] {
						want = append(want, i)
					} else {
						good = append(good, i)
					}
				}
				pw := asPartial(err)
				require.NotNil(t, pw, "a partial write: %v", err)
				require.Equal(t, morse.ReasonFieldTypeConflict, pw.Reason)
				got := slices.Clone(pw.Indices)
				slices.Sort(got)
				require.Equal(t, want, got, "exactly the bad metrics are dropped")
				written, dropped := pw.Split(len(batch))
				require.Equal(t, 1000-nbad, written)
				require.Equal(t, nbad, dropped)
				slices.Sort(sink.stored)
				require.Equal(t, good, sink.stored, "every good metric arrives, once")

				extra := sink.requests - 1
				limit := nbad // one resend per named metric
				if !names {
					limit = int(math.Ceil(2 * math.Log2(1000) * float64(nbad)))
				}
				require.LessOrEqual(t, extra, limit)
				t.Logf("%d bad of 1000, named=%v: %d extra requests (bound %d)", nbad, names, extra, limit)
			})
		}
	}
}

func TestIsolationReportsEachReasonExactly(t *testing.T) {
	var events []DropEvent
	out := &testutil.ScriptOutput{Answer: func(_ int, batch []morse.Metric) error {
		for i, seq := range testutil.Seqs(batch) {
			switch seq {
			case 3:
				return &morse.RejectedError{Index: i, Reason: morse.ReasonFieldTypeConflict, Err: errors.New("cast error")}
			case 7:
				return &morse.RejectedError{Index: i, Reason: morse.ReasonUnableToParse, Err: errors.New("bad line")}
			}
		}
		return nil
	}}
	w, err := NewWriter(out, Options{BatchSize: 10, OnDrop: collectDrops(&events), Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 10)))
	require.NoError(t, w.Close(context.Background()))
	st := w.Stats()
	require.Equal(t, int64(8), st.Written)
	require.Equal(t, map[string]int64{morse.ReasonFieldTypeConflict: 1, morse.ReasonUnableToParse: 1}, st.DroppedByReason)
	require.Len(t, events, 2)
	require.Equal(t, []int{3}, testutil.Seqs(events[0].Metrics))
	require.Equal(t, []int{7}, testutil.Seqs(events[1].Metrics))
}

func TestIsolationStopsAtARetryableFailure(t *testing.T) {
	out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
		if call == 0 {
			return &morse.RejectedError{Index: -1, Reason: "x", Err: errors.New("refused")}
		}
		return errors.New("connection reset")
	}}
	err := (&isolateSender{next: &outputSender{out: out}}).send(context.Background(), testutil.SeqMetrics(0, 4))
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "the batch is retried as a whole")
}

// BenchmarkIsolation is issue 15's bisection row: a batch of 1000 with one bad metric at a
// random place, against a sink that refuses whole requests without naming the metric (and,
// for comparison, one that names it). It reports the extra requests per batch, mean and
// worst over the iterations, against the bound of 2·log2(1000), and fails past it.
func BenchmarkIsolation(b *testing.B) {
	bound := 2 * math.Log2(1000)
	for _, names := range []bool{false, true} {
		b.Run(fmt.Sprintf("bad=1/named=%v", names), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 15))
			batch := testutil.SeqMetrics(0, 1000)
			total, worst, n := 0, 0, 0
			for b.Loop() {
				sink := &wholeRequestSink{bad: map[int]bool{r.IntN(1000): true}, names: names}
				s := &isolateSender{next: &outputSender{out: sink}}
				if pw := asPartial(s.send(context.Background(), batch)); pw == nil || len(pw.Indices) != 1 {
					b.Fatalf("want one metric dropped, got %+v", pw)
				}
				extra := sink.requests - 1
				total, worst, n = total+extra, max(worst, extra), n+1
			}
			if float64(worst) > bound {
				b.Fatalf("%d extra requests, past 2·log2(1000) = %.1f", worst, bound)
			}
			b.ReportMetric(float64(total)/float64(n), "extra-requests/batch")
			b.ReportMetric(float64(worst), "worst-extra-requests")
			b.ReportMetric(bound, "bound")
		})
	}
}
