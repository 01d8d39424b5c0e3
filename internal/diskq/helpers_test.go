package diskq

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Test payloads hold items as 8-byte big-endian numbers, so that a split is a cut.

func encodeItems(vals ...uint64) func([]byte) []byte {
	return func(dst []byte) []byte {
		for _, v := range vals {
			dst = binary.BigEndian.AppendUint64(dst, v)
		}
		return dst
	}
}

func splitItems(payload []byte, _, n int) (int, []byte, error) {
	return n * 8, append([]byte(nil), payload[n*8:]...), nil
}

// seq returns from up to, not including, to.
func seq(from, to uint64) []uint64 {
	var out []uint64
	for v := from; v < to; v++ {
		out = append(out, v)
	}
	return out
}

func itemsOf(r Record) []uint64 {
	var out []uint64
	for i := r.From; i < r.To; i++ {
		out = append(out, binary.BigEndian.Uint64(r.Payload[i*8:]))
	}
	return out
}

// corruptions collects what a queue reports damaged.
type corruptions struct {
	mu  sync.Mutex
	all []Corruption
}

func (c *corruptions) add(x Corruption) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, x)
}

func (c *corruptions) sum() (records int, items int64, unknown int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.all {
		records += x.Records
		items += x.Items
		unknown += x.Unknown
	}
	return records, items, unknown
}

func testOptions(c *corruptions) Options {
	o := Options{Sync: SyncManual, Split: splitItems}
	if c != nil {
		o.OnCorrupt = c.add
	}
	return o
}

func openQueue(t *testing.T, dir string, opts Options) (*Queue, Recovery) {
	t.Helper()
	q, rec, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { q.Close() })
	return q, rec
}

// appendRecords appends records of per items each, numbered on from first.
func appendRecords(t *testing.T, q *Queue, first uint64, records, per int) {
	t.Helper()
	for i := range records {
		from := first + uint64(i*per)
		require.NoError(t, q.Append(per, int64(from), encodeItems(seq(from, from+uint64(per))...)))
	}
}

// readAll reads and acknowledges everything, in spans of up to max items.
func readAll(t *testing.T, q *Queue, max int) []uint64 {
	t.Helper()
	var got []uint64
	for {
		sp, err := q.Read(max, func(r Record) { got = append(got, itemsOf(r)...) })
		require.NoError(t, err)
		if sp.Items() == 0 {
			return got
		}
		require.NoError(t, q.Ack(sp))
	}
}

// readSome reads up to max items without acknowledging them.
func readSome(t *testing.T, q *Queue, max int) (Span, []uint64) {
	t.Helper()
	var got []uint64
	sp, err := q.Read(max, func(r Record) { got = append(got, itemsOf(r)...) })
	require.NoError(t, err)
	require.Len(t, got, sp.Items())
	return sp, got
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	return m
}

// recordOffsets returns where each record of a segment file starts.
func recordOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var offs []int64
	for off := 0; off+overhead <= len(b); {
		h, ok := parseHeader(b[off:])
		require.True(t, ok, "record at %d", off)
		offs = append(offs, int64(off))
		off += int(h.size())
	}
	return offs
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	var b [1]byte
	_, err = f.ReadAt(b[:], off)
	require.NoError(t, err)
	b[0] ^= 0x5a
	_, err = f.WriteAt(b[:], off)
	require.NoError(t, err)
}

const anyTime = math.MaxInt64
