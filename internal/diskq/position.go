package diskq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The read position lives in a small file of two fixed-size slots, written in turn with one
// pwrite each. Each slot carries a generation and a checksum; the valid slot with the higher
// generation wins. A write torn by a power cut damages only the slot being written, so the
// previous position survives: reading then repeats a little, it never skips.
//
// A slot is 32 bytes (generation, segment, offset, skip, checksum of bytes 0..28), followed
// since record format 2 by 20 more: the head item's number, the claim, and a checksum of
// bytes 0..48. An earlier version reads the first 32 and ignores the rest; a slot it wrote
// over fails the second checksum, and its numbers are then unknown.
const (
	positionName = "position"
	slotSize     = 52
	slotSizeV1   = 32
	slotStride   = 512 // one slot per disk sector
)

// position is where the oldest unacknowledged item is: the record starting at off in
// segment seg, of which skip items are already consumed. num is that item's number and
// claim the number after the last item written when the position was, both -1 when
// unknown: Open counts what is missing from the head or the end of the newest segment by
// them.
type position struct {
	seg   uint64
	off   int64
	skip  int
	num   int64
	claim int64
}

type positionFile struct {
	f   *os.File
	gen uint64
	buf [slotSize]byte // a slot being written: not a new one on the heap every Ack
}

// openPosition opens or creates the position file and returns the newest valid position,
// with ok false when there is none.
func openPosition(dir string) (*positionFile, position, bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, positionName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, position{}, false, fmt.Errorf("diskq: position: %w", err)
	}
	pf := &positionFile{f: f}
	var best position
	found := false
	var b [slotSize]byte
	for slot := range 2 {
		n, err := f.ReadAt(b[:], int64(slot*slotStride))
		if err != nil && !errors.Is(err, io.EOF) {
			f.Close()
			return nil, position{}, false, fmt.Errorf("diskq: position: %w", err)
		}
		gen, p, ok := decodeSlot(b[:n])
		if ok && (!found || gen > pf.gen) {
			best, pf.gen, found = p, gen, true
		}
	}
	return pf, best, found, nil
}

func decodeSlot(b []byte) (uint64, position, bool) {
	if len(b) < slotSizeV1 || crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]) {
		return 0, position{}, false
	}
	le := binary.LittleEndian
	p := position{seg: le.Uint64(b[8:]), off: int64(le.Uint64(b[16:])), skip: int(le.Uint32(b[24:])),
		num: -1, claim: -1}
	if len(b) >= slotSize && crc32.Checksum(b[:48], castagnoli) == le.Uint32(b[48:]) {
		p.num, p.claim = int64(le.Uint64(b[32:])), int64(le.Uint64(b[40:]))
	}
	return le.Uint64(b[0:]), p, p.off >= 0
}

// write stores p in the slot that does not hold the newest position.
func (pf *positionFile) write(p position) error {
	pf.gen++
	b := &pf.buf
	le := binary.LittleEndian
	le.PutUint64(b[0:], pf.gen)
	le.PutUint64(b[8:], p.seg)
	le.PutUint64(b[16:], uint64(p.off))
	le.PutUint32(b[24:], uint32(p.skip))
	le.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	le.PutUint64(b[32:], uint64(p.num))
	le.PutUint64(b[40:], uint64(p.claim))
	le.PutUint32(b[48:], crc32.Checksum(b[:48], castagnoli))
	if _, err := pf.f.WriteAt(b[:], int64(pf.gen%2)*slotStride); err != nil {
		return fmt.Errorf("diskq: position: %w", err)
	}
	return nil
}
