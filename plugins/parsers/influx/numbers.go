package influx

import (
	"math"
	"strconv"
)

// Numbers are most of what a line holds, and strconv's general parsers, which handle signs,
// bases, underscores, exponents and hexadecimal, cost more than the rest of the line. The
// plain forms that senders write are read here exactly; anything else goes to strconv, which
// gives the same value for what both accept and words the errors.

// parseDecimal reads at most 19 decimal digits, which always fit a uint64.
func parseDecimal(b []byte) (n uint64, ok bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	return n, true
}

// parseInt reads a signed decimal integer, as strconv.ParseInt(s, 10, 64) does.
func parseInt(b []byte) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if n, ok := parseDecimal(digits); ok {
		switch {
		case !neg && n <= math.MaxInt64:
			return int64(n), nil
		case neg && n <= 1<<63:
			return int64(-n), nil // two's complement: -(1<<63) is math.MinInt64
		}
	}
	return strconv.ParseInt(unsafeString(b), 10, 64)
}

// parseUint reads an unsigned decimal integer, as strconv.ParseUint(s, 10, 64) does.
func parseUint(b []byte) (uint64, error) {
	if n, ok := parseDecimal(b); ok {
		return n, nil
	}
	return strconv.ParseUint(unsafeString(b), 10, 64)
}

// maxExactDigits is how many decimal digits always fit a float64's 53-bit mantissa exactly.
const maxExactDigits = 15

var pow10 = [maxExactDigits + 1]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseSimpleFloat reads [-]digits[.digits] with at most 15 digits and no exponent. The
// digits make an integer that a float64 holds exactly, and so does the power of ten; one
// division then rounds once, correctly, which is the result strconv.ParseFloat gives (its
// own exact fast path does the same). It reports false for any other form.
func parseSimpleFloat(b []byte) (float64, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	var mant uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' {
			if dot {
				return 0, false
			}
			dot = true
			continue
		}
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		mant = mant*10 + uint64(d)
		digits++
		if dot {
			frac++
		}
	}
	if digits == 0 || digits > maxExactDigits {
		return 0, false
	}
	f := float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}
