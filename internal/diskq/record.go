package diskq

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// A record on disk is a 24-byte header, the payload and a 4-byte trailer:
//
//	0  u32  payload length
//	4  u32  items (the caller's count of what the payload holds)
//	8  i64  time (the caller's, e.g. when the items arrived)
//	16 u32  CRC-32C of header bytes 0..16 and the payload
//	20 u32  CRC-32C of header bytes 0..20, so that a header can be trusted on its own
//	...     payload
//	   u32  payload length again, so that the tail can be walked backwards
//
// All integers are little endian. The header's own checksum lets a reader tell "the payload
// is damaged, and it held this many items" from "this is not a header at all"; the trailer is
// only a hint for walking backwards, checked against the header it points to.
const (
	headerSize  = 24
	trailerSize = 4
	overhead    = headerSize + trailerSize

	// MaxPayload bounds a record's payload. A length field above it is not a header.
	MaxPayload = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a record's header, decoded.
type header struct {
	length uint32
	items  uint32
	time   int64
	crc    uint32
}

// size is the record's size on disk.
func (h header) size() int64 { return overhead + int64(h.length) }

// putHeader writes h's fields, the record checksum over them and payload, and the header
// checksum into b[:headerSize], and the trailer after payload when b holds it.
func putHeader(b []byte, items int, t int64, payload []byte) {
	binary.LittleEndian.PutUint32(b[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:], uint32(items))
	binary.LittleEndian.PutUint64(b[8:], uint64(t))
	crc := crc32.Update(crc32.Checksum(b[:16], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(b[16:], crc)
	binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
}

// putTrailer writes the trailer of a record with a payload of n bytes.
func putTrailer(b []byte, n int) { binary.LittleEndian.PutUint32(b, uint32(n)) }

// parseHeader decodes b[:headerSize] and reports whether it is a header: its checksum
// matches and its fields are plausible (at least one item, a bounded length).
func parseHeader(b []byte) (header, bool) {
	if len(b) < headerSize {
		return header{}, false
	}
	h := header{
		length: binary.LittleEndian.Uint32(b[0:]),
		items:  binary.LittleEndian.Uint32(b[4:]),
		time:   int64(binary.LittleEndian.Uint64(b[8:])),
		crc:    binary.LittleEndian.Uint32(b[16:]),
	}
	// The cheap checks first: a zeroed or random region fails them without a checksum.
	if h.items == 0 || h.length > MaxPayload {
		return header{}, false
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.LittleEndian.Uint32(b[20:]) {
		return header{}, false
	}
	return h, true
}

// valid reports whether payload is the one h was written with.
func (h header) valid(hdr, payload []byte) bool {
	return uint32(len(payload)) == h.length &&
		crc32.Update(crc32.Checksum(hdr[:16], castagnoli), castagnoli, payload) == h.crc
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
