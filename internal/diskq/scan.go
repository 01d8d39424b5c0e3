package diskq

import "io"

// found is what a forward scan finds at an offset: a valid record, or a region [off, end)
// that holds none.
type found struct {
	off, end int64
	h        header
	payload  []byte // a valid record's payload; valid until the scan moves on
	ok       bool   // a valid record
	// known marks a bad region that starts with a readable header, whose item count is then
	// h.items; the region is that one record.
	known bool
}

// scanner reads records forward from an offset, checking every checksum. It never returns a
// record whose checksum is wrong, and it always moves forward, so a scan ends on any input.
type scanner struct {
	w   *window
	off int64
}

// next returns what starts at the scan's offset and moves past it, or io.EOF at the end.
func (s *scanner) next() (found, error) {
	off := s.off
	if off >= s.w.size {
		return found{}, io.EOF
	}
	b, err := s.w.bytes(off, headerSize)
	if err != nil {
		return found{}, err
	}
	if h, ok := parseHeader(b); ok {
		end := off + h.size()
		if end > s.w.size { // torn: the record runs past the end of the data
			s.off = s.w.size
			return found{off: off, end: s.w.size, h: h, known: true}, nil
		}
		payload, err := s.w.bytes(off+int64(h.hsize), int(h.length))
		if err != nil {
			return found{}, err
		}
		s.off = end
		if h.valid(payload) {
			return found{off: off, end: end, h: h, payload: payload, ok: true}, nil
		}
		return found{off: off, end: end, h: h, known: true}, nil
	}
	end, err := s.resync(off + 1)
	if err != nil {
		return found{}, err
	}
	s.off = end
	return found{off: off, end: end}, nil
}

// resync finds the first offset at or after from where a whole valid record starts, or the
// end of the data. Both checksums must match, so that bytes inside a damaged payload are
// not mistaken for a record.
func (s *scanner) resync(from int64) (int64, error) {
	for at := from; at+minRecord <= s.w.size; at++ {
		b, err := s.w.bytes(at, headerSize)
		if err != nil {
			return 0, err
		}
		h, ok := parseHeader(b)
		if !ok || at+h.size() > s.w.size {
			continue
		}
		payload, err := s.w.bytes(at+int64(h.hsize), int(h.length))
		if err != nil {
			return 0, err
		}
		if h.valid(payload) {
			return at, nil
		}
	}
	return s.w.size, nil
}
