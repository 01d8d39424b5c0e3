package diskq

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
)

// FuzzScanner feeds arbitrary bytes to the segment reader as a segment. It must never panic,
// always end, move strictly forward, and never return a record whose checksum is wrong.
// The seed corpus (testdata/fuzz/FuzzScanner) holds valid, torn, zeroed and damaged segments.
func FuzzScanner(f *testing.F) {
	var valid []byte
	for i := range 3 {
		valid = appendRecord(valid, i+1, int64(i), int64(i*i), bytes.Repeat([]byte{byte('a' + i)}, 10*i+3))
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add(make([]byte, 200))
	flipped := bytes.Clone(valid)
	flipped[headerSize+1] ^= 1
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := scanner{w: newWindow(bytes.NewReader(data), int64(len(data)))}
		last := int64(-1)
		for {
			r, err := sc.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatalf("error on an in-memory segment: %v", err)
			}
			if r.off <= last || r.end <= r.off || r.end > int64(len(data)) {
				t.Fatalf("region [%d, %d) after %d in %d bytes", r.off, r.end, last, len(data))
			}
			last = r.off
			if !r.ok {
				continue
			}
			n := binary.LittleEndian.Uint32(data[r.off:])
			hsize, crcAt := int64(headerSizeV1), 16 // format 1
			if n&formatBit != 0 {
				n, hsize, crcAt = n&^formatBit, headerSize, 24
			}
			hdr := data[r.off : r.off+hsize]
			payload := data[r.off+hsize : r.off+hsize+int64(n)]
			want := crc32.Update(crc32.Checksum(hdr[:16], castagnoli), castagnoli, payload)
			if binary.LittleEndian.Uint32(hdr[crcAt:]) != want || !bytes.Equal(payload, r.payload) {
				t.Fatalf("record at %d returned with a wrong checksum", r.off)
			}
			if crc32.Checksum(hdr[:crcAt+4], castagnoli) != binary.LittleEndian.Uint32(hdr[crcAt+4:]) {
				t.Fatalf("record at %d returned with a wrong header checksum", r.off)
			}
		}
	})
}
