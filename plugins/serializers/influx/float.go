package influx

import (
	"math"
	"strconv"
)

// appendFloat appends f exactly as strconv.AppendFloat(dst, f, 'g', -1, 64) does, faster for
// the values that metrics mostly carry: decimals with at most nine digits after the point,
// between 1e-4 and 1e6, which 'g' writes without an exponent.
//
// Such an f is r/1e9 for the integer r = round(f·1e9): then that decimal reads back as f, and
// it is the only one with nine digits after the point that does (a float below 1e6 has an
// ulp below 1e-9), so with its trailing zeros taken off it is the shortest, which is what
// the 'g' format writes. f·1e9 stays below 2^50, where its rounding error is far below one
// half, so r is found by one multiplication and checked by one division. Anything else goes
// to strconv.
func appendFloat(dst []byte, f float64) []byte {
	a := math.Abs(f)
	if !(a >= 1e-4 && a < 1e6) {
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	r := math.Round(a * 1e9)
	if r/1e9 != a {
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	n, frac := uint64(r), 9
	for frac > 0 && n%10 == 0 {
		n /= 10
		frac--
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	var buf [24]byte
	digits := strconv.AppendUint(buf[:0], n, 10)
	if frac == 0 {
		return append(dst, digits...)
	}
	if intLen := len(digits) - frac; intLen > 0 {
		dst = append(dst, digits[:intLen]...)
		dst = append(dst, '.')
		return append(dst, digits[intLen:]...)
	}
	dst = append(dst, '0', '.')
	for range frac - len(digits) {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}
