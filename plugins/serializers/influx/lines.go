package influx

import (
	"strings"

	"github.com/morse-agent/morse"
)

// appendSignedLine appends a line metric's text with each unsigned integer field written as
// a signed one, clamped to math.MaxInt64, as appendField writes them without UintSupport.
// The text follows morse.NewLineMetric's contract, so a backslash always escapes the byte
// after it, and a field value is a quoted string or runs to the next comma.
func appendSignedLine(dst []byte, lt morse.LineText) []byte {
	head, fields := lt.Split()
	dst = append(append(dst, head...), ' ')
	if strings.IndexByte(fields, '"') < 0 {
		return appendSignedPlainFields(dst, fields)
	}
	return appendSignedFields(dst, fields)
}

// appendSignedPlainFields rewrites the unsigned integers of a field set without string
// values. There, a `u` followed by a comma or the end closes a value: a key is followed by
// its equals sign, and a comma in a key is escaped. So each such `u` that has digits and an
// equals sign before it ends an unsigned integer, and finding them takes a byte search.
func appendSignedPlainFields(dst []byte, fields string) []byte {
	for {
		u := strings.IndexByte(fields, 'u')
		if u < 0 {
			return append(dst, fields...)
		}
		end := u + 1
		start := u
		for start > 0 && fields[start-1]-'0' <= 9 {
			start--
		}
		digits, ok := "", false
		if (end == len(fields) || fields[end] == ',') && start > 0 && fields[start-1] == '=' {
			digits, ok = signedDigits(fields[start:end])
		}
		if ok {
			dst = append(append(append(dst, fields[:start]...), digits...), 'i')
		} else {
			dst = append(dst, fields[:end]...)
		}
		fields = fields[end:]
	}
}

// appendSignedFields rewrites the unsigned integers of any field set, walking its keys and
// values, so that a string value that reads like one is left alone.
func appendSignedFields(dst []byte, fields string) []byte {
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
			if digits, ok := signedDigits(fields[val:i]); ok {
				dst = append(append(append(dst, fields[start:val]...), digits...), 'i')
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

// maxInt64Digits is math.MaxInt64 in decimal.
const maxInt64Digits = "9223372036854775807"

// signedDigits reads a field value written as an unsigned integer, `123u`, and returns the
// digits of the signed integer that stands for it: its own, or math.MaxInt64's for a value
// beyond. Without leading zeros the longer run of digits is the larger number, and runs of
// equal length compare as text, so nothing is converted.
func signedDigits(v string) (string, bool) {
	if len(v) < 2 || v[len(v)-1] != 'u' {
		return "", false
	}
	digits := v[:len(v)-1]
	for i := 0; i < len(digits); i++ {
		if digits[i]-'0' > 9 {
			return "", false
		}
	}
	// The parser makes line metrics of plain numbers only, but NewLineMetric takes any text
	// that InfluxDB reads as the parser does, and InfluxDB reads 007u as 7.
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) > len(maxInt64Digits) || len(digits) == len(maxInt64Digits) && digits > maxInt64Digits {
		return maxInt64Digits, true
	}
	return digits, true
}
