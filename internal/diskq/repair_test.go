package diskq

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// closedQueueOf20 writes items 0..19 in records of four to a new queue, closes it and
// returns its directory and its one segment file.
func closedQueueOf20(t *testing.T) (dir, seg string) {
	t.Helper()
	dir = t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 5, 4)
	require.NoError(t, q.Close())
	return dir, segmentFiles(t, dir)[0]
}

func TestTornTailIsCutOff(t *testing.T) {
	tests := []struct {
		name      string
		tail      func(full []byte) []byte // what the crash left after the last whole record
		wantItems int64
	}{
		{"half a header", func(full []byte) []byte { return full[:10] }, 0},
		{"header and part of the payload", func(full []byte) []byte { return full[:headerSize+12] }, 4},
		{"whole record but the trailer", func(full []byte) []byte { return full[:len(full)-2] }, 4},
		{"zeros", func(full []byte) []byte { return make([]byte, 300) }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bad corruptions
			dir, seg := closedQueueOf20(t)
			st, err := os.Stat(seg)
			require.NoError(t, err)
			full := appendRecord(nil, 4, 99, 20, encodeItems(seq(100, 104)...)(nil))
			f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(tc.tail(full))
			require.NoError(t, err)
			require.NoError(t, f.Close())

			q2, rec := openQueue(t, dir, testOptions(&bad))
			require.Equal(t, int64(len(tc.tail(full))), rec.TornBytes)
			require.Equal(t, tc.wantItems, rec.TornItems)
			// Written after the last claim (Close), a torn record counts by its header when
			// that is readable; nothing else is known of it.
			records, items, unknown := bad.sum()
			require.Equal(t, []int64{tc.wantItems, tc.wantItems, 0}, []int64{int64(records) * 4, items, int64(unknown)})
			st2, err := os.Stat(seg)
			require.NoError(t, err)
			require.Equal(t, st.Size(), st2.Size(), "cut back to the last whole record")
			appendRecords(t, q2, 20, 1, 4)
			require.Equal(t, seq(0, 24), readAll(t, q2, 7))
		})
	}
}

func TestDamagedMiddleRecordIsSkippedAndCounted(t *testing.T) {
	tests := []struct {
		name        string
		at          func(off int64) int64 // the byte to flip, given the record's offset
		wantRecords int
		wantItems   int64
		wantUnknown int
	}{
		{"payload", func(off int64) int64 { return off + headerSize + 9 }, 1, 4, 0},
		{"header", func(off int64) int64 { return off + 2 }, 0, 4, 0}, // by the item numbers
		{"trailer", func(off int64) int64 { return off + headerSize + 32 + 1 }, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bad corruptions
			dir, seg := closedQueueOf20(t)
			flipByte(t, seg, tc.at(recordOffsets(t, seg)[2]))

			q2, rec := openQueue(t, dir, testOptions(&bad))
			records, items, unknown := bad.sum()
			require.Equal(t, tc.wantRecords, records)
			require.Equal(t, tc.wantItems, items)
			require.Equal(t, tc.wantUnknown, unknown)
			require.Equal(t, rec.Corrupt.Records, records)
			require.Zero(t, rec.TornBytes)
			want := append(seq(0, 8), seq(12, 20)...)
			if tc.name == "trailer" { // the trailer is a hint outside the checksums
				want = seq(0, 20)
			}
			require.Equal(t, len(want), q2.Len())
			require.Equal(t, want, readAll(t, q2, 3))
		})
	}
}

func TestZeroedSegmentIsSkipped(t *testing.T) {
	dir := t.TempDir()
	var bad corruptions
	opts := testOptions(&bad)
	opts.SegmentBytes = 150 // two records of 4 items (60 bytes) a segment
	q, _ := openQueue(t, dir, opts)
	appendRecords(t, q, 0, 6, 4)
	require.NoError(t, q.Close())
	segs := segmentFiles(t, dir)
	require.Len(t, segs, 3)
	st, err := os.Stat(segs[1])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(segs[1], make([]byte, st.Size()), 0o600))

	q2, _ := openQueue(t, dir, opts)
	records, items, unknown := bad.sum()
	require.Equal(t, []int{0, 8, 0}, []int{records, int(items), unknown}, "by the item numbers")
	require.Equal(t, append(seq(0, 8), seq(16, 24)...), readAll(t, q2, 5))
}

func TestDamageAfterOpenIsCountedExactly(t *testing.T) {
	dir := t.TempDir()
	var bad corruptions
	q, _ := openQueue(t, dir, testOptions(&bad))
	appendRecords(t, q, 0, 5, 4)
	seg := segmentFiles(t, dir)[0]
	offs := recordOffsets(t, seg)
	flipByte(t, seg, offs[1]+3)            // header of record 1: unknown by its header
	flipByte(t, seg, offs[3]+headerSize+1) // payload of record 3
	require.Equal(t, append(seq(0, 4), append(seq(8, 12), seq(16, 20)...)...), readAll(t, q, 100))
	records, items, _ := bad.sum()
	require.Equal(t, 2, records)
	require.Equal(t, int64(8), items, "the items lost, counted exactly")
	require.Zero(t, q.Len())
}

func TestPositionFileDamageRepeatsNeverSkips(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 4, 5)
	sp, _ := readSome(t, q, 5)
	require.NoError(t, q.Ack(sp))
	sp, _ = readSome(t, q, 5)
	require.NoError(t, q.Ack(sp))
	require.NoError(t, q.Close())
	// Tear the newest slot: the one before it wins, so five items come again.
	pf, err := os.ReadFile(filepath.Join(dir, positionName))
	require.NoError(t, err)
	newest := 0
	if g0, _, _ := decodeSlot(pf[:slotSize]); g0 < 3 {
		newest = slotStride
	}
	flipByte(t, filepath.Join(dir, positionName), int64(newest+9))
	q2, rec := openQueue(t, dir, testOptions(nil))
	require.False(t, rec.PositionLost)
	require.Equal(t, seq(5, 20), readAll(t, q2, 100))

	require.NoError(t, q2.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, positionName), nil, 0o600))
	q3, rec := openQueue(t, dir, testOptions(nil))
	require.True(t, rec.PositionLost, "no position at all: everything still on disk comes again")
	require.Equal(t, 20, q3.Len())
}
