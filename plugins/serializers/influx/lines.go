package influx

import (
	"math"
	"strconv"

	"github.com/morse-agent/morse"
)

// appendSignedLine appends a line metric's text with each unsigned integer field written as
// a signed one, clamped to math.MaxInt64, as appendField writes them without UintSupport.
// The text follows morse.NewLineMetric's contract, so a backslash always escapes the byte
// after it, and a field value is a quoted string or runs to the next comma.
func appendSignedLine(dst []byte, lt morse.LineText) []byte {
	head, fields := lt.Split()
	dst = append(append(dst, head...), ' ')
	for i := 0; i < len(fields); {
		start := i
		for i < len(fields) && fields[i] != '=' {
			if fields[i] == '\\' {
				i++
			}
			i++
		}
		i++ // the equals sign
		if i < len(fields) && fields[i] == '"' {
			for i++; i < len(fields) && fields[i] != '"'; i++ {
				if fields[i] == '\\' {
					i++
				}
			}
			i++ // the closing quote
		} else {
			val := i
			for i < len(fields) && fields[i] != ',' {
				i++
			}
			if u, ok := unsignedValue(fields[val:i]); ok {
				dst = append(dst, fields[start:val]...)
				dst = append(strconv.AppendInt(dst, int64(min(u, math.MaxInt64)), 10), 'i')
				start = i
			}
		}
		i = min(i, len(fields))
		dst = append(dst, fields[start:i]...)
		if i < len(fields) {
			dst = append(dst, ',')
			i++
		}
	}
	return dst
}

// unsignedValue reads a field value written as an unsigned integer, `123u`.
func unsignedValue(v string) (uint64, bool) {
	if len(v) < 2 || v[len(v)-1] != 'u' {
		return 0, false
	}
	u, err := strconv.ParseUint(v[:len(v)-1], 10, 64)
	return u, err == nil
}
