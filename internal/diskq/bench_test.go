package diskq

import (
	"bytes"
	"testing"
)

// BenchmarkAppend appends records of 64 items (payloads of 4 KiB) and of one item (64 B),
// the hot path of the disk buffer: one write(2) a record, no fsync.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name  string
		items int
		size  int
	}{{"64x4KiB", 64, 4096}, {"1x64B", 1, 64}} {
		b.Run(c.name, func(b *testing.B) {
			q, _, err := Open(b.TempDir(), Options{Sync: SyncManual})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			payload := bytes.Repeat([]byte{'x'}, c.size)
			enc := func(dst []byte) []byte { return append(dst, payload...) }
			b.SetBytes(int64(c.size))
			b.ReportAllocs()
			for b.Loop() {
				if err := q.Append(c.items, 1, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadAck reads and acknowledges records of 64 items, 4 KiB each.
func BenchmarkReadAck(b *testing.B) {
	q, _, err := Open(b.TempDir(), Options{Sync: SyncManual})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	payload := bytes.Repeat([]byte{'x'}, 4096)
	enc := func(dst []byte) []byte { return append(dst, payload...) }
	for range b.N {
		if err := q.Append(64, 1, enc); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sp, err := q.Read(64, func(Record) {})
		if err != nil || sp.Items() != 64 {
			b.Fatal(err, sp.Items())
		}
		if err := q.Ack(sp); err != nil {
			b.Fatal(err)
		}
	}
}
