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
	n := uint64(r)
	ip, fp := n/1e9, n%1e9
	if f < 0 {
		dst = append(dst, '-')
	}
	dst = strconv.AppendUint(dst, ip, 10)
	if fp == 0 {
		return dst
	}
	// The nine digits after the point, two at a time, then without their trailing zeros.
	var frac [9]byte
	for i := 7; i > 0; i -= 2 {
		d := fp % 100 * 2
		frac[i], frac[i+1] = pairs[d], pairs[d+1]
		fp /= 100
	}
	frac[0] = byte('0' + fp)
	end := len(frac)
	for frac[end-1] == '0' {
		end--
	}
	dst = append(dst, '.')
	return append(dst, frac[:end]...)
}

// pairs holds the two digits of each number below 100, at twice the number.
const pairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"
