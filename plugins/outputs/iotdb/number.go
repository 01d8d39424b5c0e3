package iotdb

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// Numbers are most of a tablet's bytes. strconv.AppendFloat with the shortest representation
// costs 40 to 50 ns a value, and most of it goes on values that are integers or have few
// decimals (3, 12.5, 80.125): appendFloat writes those as fixed-point digits in a few
// nanoseconds, and leaves the others to strconv. A JSON number only has to parse back to the
// same float64; it need not be the shortest one.

const (
	// maxExact is 2^53: every integer of smaller magnitude is exact in a float64.
	maxExact = 1 << 53
	// scale is 10^decimals, the most decimals appendFloat writes itself.
	scale    = 1e6
	decimals = 6
	// maxInt is the magnitude below which an integral float is written as an integer.
	maxInt = 1e18
)

// appendFloat appends the finite float f as a JSON number that reads back as f exactly.
//
// An integral f is written as an integer. Otherwise, when f·10^6 rounds to an integer n of
// less than 2^53 and n / 10^6 computed in float64 is f again, the decimal n·10^-6 (its
// trailing zeros dropped) is the answer: n and 10^6 are exact, so the division is correctly
// rounded, which is exactly what a parser does with the digits of n and a decimal point six
// places from the right (IEEE 754; Clinger's fast path). Other values take strconv's
// shortest representation.
func appendFloat(b []byte, f float64) []byte {
	if f == math.Trunc(f) && f > -maxInt && f < maxInt {
		if f == 0 && math.Signbit(f) {
			return append(b, '-', '0')
		}
		return appendInt(b, int64(f))
	}
	if s := f * scale; s > -maxExact && s < maxExact {
		if n := int64(s); float64(n) == s && float64(n)/scale == f {
			return appendFixed(b, n)
		}
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendFixed appends n·10^-6, which is not an integer, with its trailing zeros dropped:
// the integer part, then the decimals that are left, two at a time from a table.
func appendFixed(b []byte, n int64) []byte {
	u := uint64(n)
	if n < 0 {
		b = append(b, '-')
		u = uint64(-n)
	}
	b = append(appendUint(b, u/scale), '.')
	frac, k := u%scale, decimals // frac is not 0: at most five trailing zeros
	if frac%1000 == 0 {
		frac, k = frac/1000, k-3
	}
	if frac%100 == 0 {
		frac, k = frac/100, k-2
	}
	if frac%10 == 0 {
		frac, k = frac/10, k-1
	}
	l := len(b)
	b = slices.Grow(b, k)[:l+k]
	for i := l + k; i > l+1; i -= 2 { // k digits, leading zeros included
		p := frac % 100 * 2
		b[i-2], b[i-1] = digitPairs[p], digitPairs[p+1]
		frac /= 100
	}
	if k%2 == 1 {
		b[l] = byte('0' + frac)
	}
	return b
}

// digitPairs are the two digits of 00 to 99.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// appendInt appends n in decimal, as strconv.AppendInt(b, n, 10) does.
func appendInt(b []byte, n int64) []byte {
	if n < 0 {
		return appendUint(append(b, '-'), uint64(-n)) // -MinInt64 wraps to 2^63 as a uint64
	}
	return appendUint(b, uint64(n))
}

// appendUint appends u in decimal, as strconv.AppendUint(b, u, 10) does, but writes the
// digits in place, two at a time, where strconv writes them to a buffer of its own and then
// copies them: for the 13 to 19 digits of a timestamp, the copy is a third of the cost.
func appendUint(b []byte, u uint64) []byte {
	n := digitCount(u)
	l := len(b)
	b = slices.Grow(b, n)[:l+n]
	i := l + n
	for u >= 100 {
		q := u / 100
		p := (u - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[p], digitPairs[p+1]
		u = q
	}
	if u >= 10 {
		b[i-2], b[i-1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		b[i-1] = byte('0' + u)
	}
	return b
}

// digitCount is the number of decimal digits of u: about log10(2)·bits, corrected by one
// comparison.
func digitCount(u uint64) int {
	d := (bits.Len64(u|1) * 1233) >> 12 // 1233/4096 ≈ log10(2)
	if d < len(upow10) && u >= upow10[d] {
		d++
	}
	return max(d, 1)
}

// upow10 are 10^0 to 10^19.
var upow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}
