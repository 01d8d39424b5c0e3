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
const (
	positionName = "position"
	slotSize     = 32
	slotStride   = 512 // one slot per disk sector
)

// position is where the oldest unacknowledged item is: the record starting at off in
// segment seg, of which skip items are already consumed.
type position struct {
	seg  uint64
	off  int64
	skip int
}

type positionFile struct {
	f   *os.File
	gen uint64
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
	if len(b) < slotSize || crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]) {
		return 0, position{}, false
	}
	le := binary.LittleEndian
	p := position{seg: le.Uint64(b[8:]), off: int64(le.Uint64(b[16:])), skip: int(le.Uint32(b[24:]))}
	return le.Uint64(b[0:]), p, p.off >= 0
}

// write stores p in the slot that does not hold the newest position.
func (pf *positionFile) write(p position) error {
	pf.gen++
	var b [slotSize]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], pf.gen)
	le.PutUint64(b[8:], p.seg)
	le.PutUint64(b[16:], uint64(p.off))
	le.PutUint32(b[24:], uint32(p.skip))
	le.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	if _, err := pf.f.WriteAt(b[:], int64(pf.gen%2)*slotStride); err != nil {
		return fmt.Errorf("diskq: position: %w", err)
	}
	return nil
}
