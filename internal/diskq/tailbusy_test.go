package diskq

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func leaseItems(recs []Record) []uint64 {
	var got []uint64
	for _, r := range recs {
		got = append(got, itemsOf(r)...)
	}
	return got
}

// PopTail never takes items that a span read from the head holds, in flight or acknowledged
// but not yet behind the head, even when an older span went back (Unread) and so the cursor
// lies before them: it would hand them out twice, and Len would go negative.
func TestPopTailSkipsBusySpansPastTheCursor(t *testing.T) {
	for _, acked := range []bool{false, true} {
		t.Run(fmt.Sprintf("acked %v", acked), func(t *testing.T) {
			for _, max := range []int{30, 15} { // whole records, or a split of the newest
				q, _ := openQueue(t, t.TempDir(), testOptions(nil))
				appendRecords(t, q, 0, 3, 10)
				a, _ := readSome(t, q, 10)
				b, got := readSome(t, q, 5) // ends inside the second record
				require.Equal(t, seq(10, 15), got)
				if acked {
					require.NoError(t, q.Ack(b))
				}
				q.Unread(a)
				require.Equal(t, 25, q.Len())

				l, recs, err := q.PopTail(max)
				require.NoError(t, err)
				require.Equal(t, seq(15, 30), leaseItems(recs), "max %d", max)
				require.Equal(t, 10, q.Len())
				require.NoError(t, q.AckLease(l))

				require.Equal(t, seq(0, 10), readAll(t, q, 100))
				if !acked {
					require.NoError(t, q.Ack(b))
				}
				require.Zero(t, q.Len())
				l, _, err = q.PopTail(max)
				require.NoError(t, err)
				require.Nil(t, l)
			}
		})
	}
}

// A record that cannot be split ends the lease before it rather than failing PopTail, when
// newer records were picked already.
func TestPopTailStopsBeforeRecordItCannotSplit(t *testing.T) {
	o := testOptions(nil)
	o.Split = func(payload []byte, items, n int) (int, []byte, error) {
		return 0, nil, errors.New("cannot split")
	}
	q, _ := openQueue(t, t.TempDir(), o)
	appendRecords(t, q, 0, 1, 10)
	appendRecords(t, q, 10, 1, 2)
	l, recs, err := q.PopTail(5)
	require.NoError(t, err)
	require.Equal(t, seq(10, 12), leaseItems(recs))
	require.NoError(t, q.AckLease(l))
	_, _, err = q.PopTail(5)
	require.Error(t, err, "nothing newer to take: the caller reads from the head instead")
	require.Equal(t, seq(0, 10), readAll(t, q, 100))
}
