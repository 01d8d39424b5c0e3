package diskq

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// A record on disk is a header, the payload and a 4-byte trailer. The current format (2) has
// a 32-byte header:
//
//	0  u32  payload length, with bit 31 set (format 2)
//	4  u32  items (the caller's count of what the payload holds)
//	8  i64  time (the caller's, e.g. when the items arrived)
//	16 i64  number of the record's first item: the queue numbers every item it writes, one
//	        after the other, so that the gap between two intact records is exactly what was
//	        lost between them, headers and all
//	24 u32  CRC-32C of header bytes 0..16 and the payload
//	28 u32  CRC-32C of header bytes 0..28, so that a header can be trusted on its own
//	...     payload
//	   u32  payload length again, bit 31 set, so that the tail can be walked backwards
//
// Format 1, written by earlier versions and still read, has a 24-byte header without the
// item number: bytes 0..16 as above with bit 31 of the length clear, then the two checksums
// (header checksum over bytes 0..20). Its trailer has bit 31 clear.
//
// All integers are little endian. The header's own checksum lets a reader tell "the payload
// is damaged, and it held this many items" from "this is not a header at all"; the trailer is
// only a hint for walking backwards, checked against the header it points to. The record
// checksum leaves the item number out, so that records can be renumbered (a lease put back
// at the tail) by rewriting the header checksum alone.
const (
	headerSize   = 32 // format 2
	headerSizeV1 = 24
	trailerSize  = 4
	overhead     = headerSize + trailerSize
	minRecord    = headerSizeV1 + trailerSize // the smallest record of either format

	// MaxPayload bounds a record's payload. A length field above it is not a header.
	MaxPayload = 1 << 30

	formatBit = 1 << 31 // set in a format 2 record's length and trailer
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a record's header, decoded.
type header struct {
	length uint32
	items  uint32
	time   int64
	num    int64 // number of the first item; -1 in format 1, which has none
	crc    uint32
	hsize  int // the header's size on disk: headerSize, or headerSizeV1
}

// size is the record's size on disk.
func (h header) size() int64 { return int64(h.hsize) + trailerSize + int64(h.length) }

// end is the number after the record's last item, -1 when the record has no numbers.
func (h header) end() int64 {
	if h.num < 0 {
		return -1
	}
	return h.num + int64(h.items)
}

// putHeader writes a format 2 header into b[:headerSize]: the fields, the record checksum
// over them and payload, and the header checksum.
func putHeader(b []byte, items int, t, num int64, payload []byte) {
	binary.LittleEndian.PutUint32(b[0:], uint32(len(payload))|formatBit)
	binary.LittleEndian.PutUint32(b[4:], uint32(items))
	binary.LittleEndian.PutUint64(b[8:], uint64(t))
	crc := crc32.Update(crc32.Checksum(b[:16], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(b[24:], crc)
	renumber(b, num)
}

// renumber sets the item number of the format 2 header in b and its header checksum.
func renumber(b []byte, num int64) {
	binary.LittleEndian.PutUint64(b[16:], uint64(num))
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
}

// putHeaderV1 writes a format 1 header into b[:headerSizeV1]. Only a trim of a record
// written by an earlier version needs it: the shortened header must keep the payload where
// it is.
func putHeaderV1(b []byte, items int, t int64, payload []byte) {
	binary.LittleEndian.PutUint32(b[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:], uint32(items))
	binary.LittleEndian.PutUint64(b[8:], uint64(t))
	crc := crc32.Update(crc32.Checksum(b[:16], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(b[16:], crc)
	binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
}

// putTrailer writes the trailer of a record with a payload of n bytes.
func putTrailer(b []byte, n int, hsize int) {
	v := uint32(n)
	if hsize == headerSize {
		v |= formatBit
	}
	binary.LittleEndian.PutUint32(b, v)
}

// parseTrailer decodes a trailer: the payload length and the header size it implies.
func parseTrailer(b []byte) (n int64, hsize int) {
	v := binary.LittleEndian.Uint32(b)
	if v&formatBit != 0 {
		return int64(v &^ formatBit), headerSize
	}
	return int64(v), headerSizeV1
}

// parseHeader decodes the header at the start of b, of either format, and reports whether it
// is one: its checksum matches and its fields are plausible (at least one item, a bounded
// length). A format 2 header is never a format 1 one: its length has bit 31 set.
func parseHeader(b []byte) (header, bool) {
	if len(b) < headerSizeV1 {
		return header{}, false
	}
	le := binary.LittleEndian
	h := header{
		length: le.Uint32(b[0:]),
		items:  le.Uint32(b[4:]),
		time:   int64(le.Uint64(b[8:])),
		num:    -1,
		hsize:  headerSizeV1,
	}
	// The cheap checks first: a zeroed or random region fails them without a checksum.
	if h.items == 0 {
		return header{}, false
	}
	if h.length&formatBit == 0 {
		if h.length > MaxPayload || crc32.Checksum(b[:20], castagnoli) != le.Uint32(b[20:]) {
			return header{}, false
		}
		h.crc = le.Uint32(b[16:])
		return h, true
	}
	h.length &^= formatBit
	if len(b) < headerSize || h.length > MaxPayload || crc32.Checksum(b[:28], castagnoli) != le.Uint32(b[28:]) {
		return header{}, false
	}
	h.num, h.crc, h.hsize = int64(le.Uint64(b[16:])), le.Uint32(b[24:]), headerSize
	if h.num < 0 {
		return header{}, false
	}
	return h, true
}

// valid reports whether payload is the one h was written with.
func (h header) valid(payload []byte) bool {
	if uint32(len(payload)) != h.length {
		return false
	}
	var b [16]byte
	length := h.length
	if h.hsize == headerSize {
		length |= formatBit
	}
	binary.LittleEndian.PutUint32(b[0:], length)
	binary.LittleEndian.PutUint32(b[4:], h.items)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.time))
	return crc32.Update(crc32.Checksum(b[:], castagnoli), castagnoli, payload) == h.crc
}

// window reads a file through a buffer, so that a forward scan costs few system calls.
// What bytes returns is valid until the next call.
type window struct {
	r    io.ReaderAt
	size int64 // where the readable data ends
	base int64 // file offset of buf[0]
	buf  []byte
}

const windowChunk = 256 << 10

func newWindow(r io.ReaderAt, size int64) *window { return &window{r: r, size: size} }

// reset points the window at another file or size, keeping its buffer.
func (w *window) reset(r io.ReaderAt, size int64) {
	w.r, w.size, w.base, w.buf = r, size, 0, w.buf[:0]
}

// bytes returns the n bytes at off, or fewer when the data ends first.
func (w *window) bytes(off int64, n int) ([]byte, error) {
	if off >= w.size {
		return nil, nil
	}
	n = int(min(int64(n), w.size-off))
	if off >= w.base && off+int64(n) <= w.base+int64(len(w.buf)) {
		return w.buf[off-w.base : off-w.base+int64(n)], nil
	}
	want := int(min(max(int64(n), windowChunk), w.size-off))
	if cap(w.buf) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	got, err := w.r.ReadAt(w.buf, off)
	w.base, w.buf = off, w.buf[:got]
	if got < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return w.buf, err
	}
	return w.buf[:n], nil
}
