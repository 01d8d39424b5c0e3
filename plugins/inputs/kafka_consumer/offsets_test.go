package kafka_consumer

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPartitionCommitsOnlyUpToTheFirstMessageNotDone: whatever order messages are done in,
// the offset to commit never passes one still in flight.
func TestPartitionCommitsOnlyUpToTheFirstMessageNotDone(t *testing.T) {
	cases := []struct {
		name    string
		offsets []int64 // read in this order
		done    []int   // positions done, in this order
		commits []int64 // the offset to commit after each, -1 when it did not move
	}{
		{name: "in order", offsets: []int64{10, 11, 12}, done: []int{0, 1, 2}, commits: []int64{11, 12, 13}},
		{name: "last first", offsets: []int64{10, 11, 12}, done: []int{2, 1, 0}, commits: []int64{-1, -1, 13}},
		{name: "middle waits", offsets: []int64{10, 11, 12}, done: []int{1, 0, 2}, commits: []int64{-1, 12, 13}},
		{name: "gaps in offsets", offsets: []int64{5, 9, 40}, done: []int{0, 2, 1}, commits: []int64{6, -1, 41}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &partition{topic: "t", id: 0}
			refs := make([]ref, len(tc.offsets))
			for i, o := range tc.offsets {
				refs[i] = p.add(&kgo.Record{Offset: o, LeaderEpoch: 3})
			}
			for i, at := range tc.done {
				moved := p.done(refs[at].seq)
				if tc.commits[i] < 0 {
					require.False(t, moved, "step %d", i)
					continue
				}
				require.True(t, moved, "step %d", i)
				require.Equal(t, kgo.EpochOffset{Epoch: 3, Offset: tc.commits[i]}, p.commit, "step %d", i)
			}
			require.Empty(t, p.inflight)
			require.True(t, p.dirty)
		})
	}
}

// TestRevokedPartitionCommitsNothing: once revoked, a partition's late deliveries move
// nothing, so only the member that took it over commits it.
func TestRevokedPartitionCommitsNothing(t *testing.T) {
	p := &partition{topic: "t", id: 0}
	at := p.add(&kgo.Record{Offset: 1})
	p.revoked = true
	require.False(t, p.done(at.seq))
	require.False(t, p.dirty)
}
