package loadgen

import (
	"bytes"
	"sync"
)

// The sender stamps line k of a run with BaseTime+k ns, so a line's timestamp is its
// identity: a sink that records the timestamps it has seen counts the distinct lines that
// arrived, and tells apart the duplicates a retried write delivers twice.

// chunkBits is how many consecutive timestamps one bitmap chunk covers.
const chunkBits = 4096

// maxCarry bounds the part of a line the tracker holds while the rest of it is still to be
// read; a longer line is counted as untracked rather than held.
const maxCarry = 64 << 10

// seenSet records the timestamps seen. A run's timestamps are consecutive, so a bitmap per
// chunk of 4096 holds a million lines in 128 KiB.
type seenSet struct {
	mu         sync.Mutex
	chunks     map[int64]*[chunkBits / 64]uint64
	distinct   int64
	duplicates int64
}

// add records the timestamps of one body.
func (s *seenSet) add(stamps []int64) {
	if len(stamps) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chunks == nil {
		s.chunks = map[int64]*[chunkBits / 64]uint64{}
	}
	var lastKey int64
	var last *[chunkBits / 64]uint64
	for _, ts := range stamps {
		key, bit := ts/chunkBits, ts%chunkBits
		if bit < 0 { // a timestamp before 1970 still has a place
			key, bit = key-1, bit+chunkBits
		}
		if last == nil || key != lastKey {
			last = s.chunks[key]
			if last == nil {
				last = new([chunkBits / 64]uint64)
				s.chunks[key] = last
			}
			lastKey = key
		}
		word, mask := &last[bit/64], uint64(1)<<(bit%64)
		if *word&mask != 0 {
			s.duplicates++
			continue
		}
		*word |= mask
		s.distinct++
	}
}

// counts returns the distinct and duplicate lines recorded.
func (s *seenSet) counts() (distinct, duplicates int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.distinct, s.duplicates
}

// reset forgets every timestamp.
func (s *seenSet) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks, s.distinct, s.duplicates = nil, 0, 0
}

// stampReader collects the timestamps of the lines of one body as it streams in, in pieces
// that may cut a line anywhere.
type stampReader struct {
	carry     []byte // the start of a line whose end is still to come
	overflow  bool   // the line in carry outgrew maxCarry
	stamps    []int64
	untracked int64 // lines that end in no integer timestamp
}

// write takes the next piece of the body.
func (r *stampReader) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			r.hold(p)
			return
		}
		line := p[:i]
		if len(r.carry) > 0 || r.overflow {
			r.hold(line)
			line = r.carry
		}
		r.line(line)
		r.carry, r.overflow = r.carry[:0], false
		p = p[i+1:]
	}
}

// end ends the body: a last line without a newline counts too.
func (r *stampReader) end() {
	if len(r.carry) > 0 || r.overflow {
		r.line(r.carry)
	}
	r.carry, r.overflow = r.carry[:0], false
}

func (r *stampReader) hold(p []byte) {
	if r.overflow || len(r.carry)+len(p) > maxCarry {
		r.overflow, r.carry = true, r.carry[:0]
		return
	}
	r.carry = append(r.carry, p...)
}

// line records the timestamp that ends one line; a blank line is no line.
func (r *stampReader) line(l []byte) {
	if r.overflow {
		r.untracked++
		return
	}
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	ts, ok := lastInt(l)
	if !ok {
		r.untracked++
		return
	}
	r.stamps = append(r.stamps, ts)
}

// lastInt parses the line's last space-separated field as a decimal integer.
func lastInt(l []byte) (int64, bool) {
	l = bytes.TrimRight(l, " \r")
	f := l[bytes.LastIndexByte(l, ' ')+1:]
	neg := len(f) > 0 && f[0] == '-'
	if neg {
		f = f[1:]
	}
	if len(f) == 0 || len(f) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n < 0 { // 19 digits can pass int64's range
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
