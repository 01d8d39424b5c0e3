package diskq

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The damage tests write 10,000 items, numbered 0 to 9,999, in records of 1 to 64 items,
// damage the files at rest, reopen and read everything. What is read plus what OnCorrupt
// counts is exactly what was written, and what is read is exactly the items of the records
// whose bytes are untouched.

const damageItems = 10_000

// written is a queue written for the damage tests, closed, with its files as they were.
type written struct {
	dir   string
	files map[string][]byte // segment name → content
	recs  []writtenRecord
	acked uint64 // items read and acknowledged before the close
}

type writtenRecord struct {
	file       string
	off, end   int64 // header and payload: the trailer is outside the checksums
	size       int64 // where the trailer ends: a record cut short of it is torn
	first, num uint64
}

func writeForDamage(t *testing.T, seed uint64, segmentBytes int64, acked int) *written {
	t.Helper()
	w := &written{dir: t.TempDir(), files: map[string][]byte{}}
	o := testOptions(nil)
	o.SegmentBytes = segmentBytes
	q, _ := openQueue(t, w.dir, o)
	rng := rand.New(rand.NewPCG(seed, 99))
	for n := uint64(0); n < damageItems; {
		per := min(uint64(1+rng.IntN(64)), damageItems-n)
		require.NoError(t, q.Append(int(per), int64(n), encodeItems(seq(n, n+per)...)))
		n += per
	}
	for w.acked < uint64(acked) {
		sp, _ := readSome(t, q, min(500, acked-int(w.acked)))
		require.NoError(t, q.Ack(sp))
		w.acked += uint64(sp.Items())
	}
	require.NoError(t, q.Close())
	for _, path := range segmentFiles(t, w.dir) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		name := filepath.Base(path)
		w.files[name] = b
		sc := scanner{w: newWindow(bytes.NewReader(b), int64(len(b)))}
		for {
			f, err := sc.next()
			if err != nil {
				break
			}
			require.True(t, f.ok, "%s at %d", name, f.off)
			w.recs = append(w.recs, writtenRecord{file: name, off: f.off, end: f.end - trailerSize,
				size: f.end, first: uint64(f.h.num), num: uint64(f.h.items)})
		}
	}
	return w
}

func (w *written) path(name string) string { return filepath.Join(w.dir, name) }

func (w *written) names() []string {
	var names []string
	for name := range w.files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// intact returns the items not yet acknowledged of the records whose bytes are unchanged.
func (w *written) intact(t *testing.T) []uint64 {
	t.Helper()
	now := map[string][]byte{}
	for name := range w.files {
		b, err := os.ReadFile(w.path(name))
		require.NoError(t, err)
		now[name] = b
	}
	var want []uint64
	for _, r := range w.recs {
		b := now[r.file]
		if r.size > int64(len(b)) || !bytes.Equal(b[r.off:r.end], w.files[r.file][r.off:r.end]) {
			continue
		}
		for v := max(r.first, w.acked); v < r.first+r.num; v++ {
			want = append(want, v)
		}
	}
	return want
}

// check reopens the damaged queue and reads everything: read + counted = written, and
// read = the intact items, exactly.
func (w *written) check(t *testing.T) {
	t.Helper()
	want := w.intact(t)
	var bad corruptions
	q, _ := openQueue(t, w.dir, testOptions(&bad))
	got := readAll(t, q, 1000)
	_, items, unknown := bad.sum()
	require.Zero(t, unknown, "every loss is counted exactly")
	require.Equal(t, damageItems-int64(w.acked), int64(len(got))+items, "read %d, counted %d", len(got), items)
	requireSameItems(t, want, got)
	require.NoError(t, q.Close())
	// Counted once: a second Open finds nothing more missing.
	var again corruptions
	q2, _ := openQueue(t, w.dir, testOptions(&again))
	require.Zero(t, q2.Len())
	_, items, unknown = again.sum()
	require.Zero(t, items+int64(unknown), "counted again on the next Open: %+v", again.all)
}

// requireSameItems compares without printing ten thousand numbers.
func requireSameItems(t *testing.T, want, got []uint64) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("item %d: read %d, the intact item is %d", i, got[i], want[i])
		}
	}
	require.Equal(t, len(want), len(got), "items read: exactly the intact ones")
}

// flip XORs the byte at off (of the file as it was written) with mask, when the file still
// holds it.
func (w *written) flip(t *testing.T, name string, off int64, mask byte) {
	t.Helper()
	f, err := os.OpenFile(w.path(name), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	if st, err := f.Stat(); err != nil || off >= st.Size() {
		return
	}
	var b [1]byte
	_, err = f.ReadAt(b[:], off)
	require.NoError(t, err)
	b[0] ^= mask
	_, err = f.WriteAt(b[:], off)
	require.NoError(t, err)
}

func (w *written) zero(t *testing.T, name string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(w.path(name), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	off = max(0, min(off, st.Size()-n))
	_, err = f.WriteAt(make([]byte, min(n, st.Size())), off)
	require.NoError(t, err)
}

func (w *written) truncate(t *testing.T, name string, size int64) {
	t.Helper()
	require.NoError(t, os.Truncate(w.path(name), size))
}

func (w *written) last() writtenRecord { return w.recs[len(w.recs)-1] }

func TestFlippedBytesCountedExactly(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := writeForDamage(t, seed, 0, 0)
			name := w.names()[0]
			size := int64(len(w.files[name]))
			rng := rand.New(rand.NewPCG(seed, 7))
			for range 20 {
				w.flip(t, name, rng.Int64N(size), byte(1+rng.IntN(255)))
			}
			w.check(t)
		})
	}
}

func TestZeroed4KiBCountedExactly(t *testing.T) {
	const kib4 = 4096
	tests := []struct {
		name         string
		segmentBytes int64
		acked        int
		at           func(w *written) (file string, off int64)
	}{
		{"segment start", 0, 0, func(w *written) (string, int64) { return w.names()[0], 0 }},
		{"across a record boundary", 0, 0, func(w *written) (string, int64) {
			r := w.recs[len(w.recs)/2]
			return r.file, r.off - kib4/2
		}},
		{"middle, aligned", 0, 0, func(w *written) (string, int64) { return w.names()[0], 8 * kib4 }},
		{"end of the newest segment", 0, 0, func(w *written) (string, int64) {
			return w.names()[0], int64(len(w.files[w.names()[0]])) - kib4
		}},
		{"across the head", 0, 3001, func(w *written) (string, int64) {
			for _, r := range w.recs {
				if r.first+r.num > w.acked {
					return r.file, r.off - 100
				}
			}
			panic("no head")
		}},
		{"start of the first of several segments", 16 << 10, 0, func(w *written) (string, int64) { return w.names()[0], 0 }},
		{"start of a middle segment", 16 << 10, 0, func(w *written) (string, int64) { return w.names()[3], 0 }},
		{"end of a middle segment", 16 << 10, 0, func(w *written) (string, int64) {
			return w.names()[2], int64(len(w.files[w.names()[2]])) - kib4
		}},
		{"end of the newest of several segments", 16 << 10, 0, func(w *written) (string, int64) {
			n := w.names()
			return n[len(n)-1], int64(len(w.files[n[len(n)-1]])) - kib4
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := writeForDamage(t, 3, tc.segmentBytes, tc.acked)
			if tc.segmentBytes > 0 {
				require.Greater(t, len(w.names()), 4)
			}
			file, off := tc.at(w)
			w.zero(t, file, off, kib4)
			w.check(t)
		})
	}
}

func TestTornFinalRecordCountedExactly(t *testing.T) {
	w0 := writeForDamage(t, 5, 0, 0)
	last := w0.last()
	hsize := int64(headerSize)
	payload := last.end - last.off - hsize
	cuts := map[string]int64{
		"payload, one byte in":   last.off + hsize + 1,
		"payload, middle":        last.off + hsize + payload/2,
		"payload, one byte left": last.end - 1,
		"trailer":                last.end + 2,
	}
	for k := range hsize {
		cuts[fmt.Sprintf("header, %d bytes left", k)] = last.off + k
	}
	for name, size := range cuts {
		t.Run(name, func(t *testing.T) {
			w := writeForDamage(t, 5, 0, 0)
			w.truncate(t, last.file, size)
			w.check(t)
		})
	}
}

// TestRandomDamageCountedExactly is a property test: random flips, zeroed runs and a cut
// end, together, over several segments, always add up.
func TestRandomDamageCountedExactly(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			w := writeForDamage(t, seed, int64(8<<10+rng.IntN(64<<10)), rng.IntN(2)*rng.IntN(damageItems))
			names := w.names()
			for range rng.IntN(4) {
				name := names[rng.IntN(len(names))]
				size := int64(len(w.files[name]))
				switch rng.IntN(3) {
				case 0:
					for range 1 + rng.IntN(20) {
						w.flip(t, name, rng.Int64N(size), byte(1+rng.IntN(255)))
					}
				case 1:
					w.zero(t, name, rng.Int64N(size), 1+rng.Int64N(8<<10))
				default:
					w.truncate(t, name, rng.Int64N(size))
				}
			}
			w.check(t)
		})
	}
}
