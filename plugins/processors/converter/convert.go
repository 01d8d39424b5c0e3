package converter

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
)

// The conversions follow Telegraf's: numbers round to the nearest integer and clamp to the
// target's range, strings are parsed (a "0x" prefix means hexadecimal), booleans are 1 and
// 0, and numbers are true when positive. One difference: NaN cannot be converted to an
// integer, where Telegraf would write whatever the CPU makes of it.

var errNaN = errors.New("NaN has no integer value")

func toString(v morse.Value) string {
	switch v.Type() {
	case morse.TypeString:
		return v.Str()
	case morse.TypeFloat:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case morse.TypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case morse.TypeUint:
		return strconv.FormatUint(v.Uint(), 10)
	case morse.TypeBool:
		return strconv.FormatBool(v.Bool())
	}
	return ""
}

// floatToInt rounds and clamps f to an int64.
func floatToInt(f float64) (int64, error) {
	switch {
	case math.IsNaN(f):
		return 0, errNaN
	case f < math.MinInt64:
		return math.MinInt64, nil
	case f >= math.MaxInt64: // float64(MaxInt64) rounds up to 2^63, which is out of range
		return math.MaxInt64, nil
	}
	return int64(math.Round(f)), nil
}

// floatToUint rounds and clamps f to a uint64.
func floatToUint(f float64) (uint64, error) {
	switch {
	case math.IsNaN(f):
		return 0, errNaN
	case f < 0:
		return 0, nil
	case f >= math.MaxUint64:
		return math.MaxUint64, nil
	}
	return uint64(math.Round(f)), nil
}

func boolNumber(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func toInteger(v morse.Value) (int64, error) {
	switch v.Type() {
	case morse.TypeInt:
		return v.Int(), nil
	case morse.TypeUint:
		if v.Uint() > math.MaxInt64 {
			return math.MaxInt64, nil
		}
		return int64(v.Uint()), nil
	case morse.TypeFloat:
		return floatToInt(v.Float())
	case morse.TypeBool:
		return boolNumber(v.Bool()), nil
	}
	s := v.Str()
	if hex, ok := strings.CutPrefix(s, "0x"); ok {
		if n, err := strconv.ParseInt(hex, 16, 64); err == nil {
			return n, nil
		}
	} else if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return floatToInt(f)
}

func toUnsigned(v morse.Value) (uint64, error) {
	switch v.Type() {
	case morse.TypeUint:
		return v.Uint(), nil
	case morse.TypeInt:
		return uint64(max(v.Int(), 0)), nil
	case morse.TypeFloat:
		return floatToUint(v.Float())
	case morse.TypeBool:
		return uint64(boolNumber(v.Bool())), nil
	}
	s := v.Str()
	if hex, ok := strings.CutPrefix(s, "0x"); ok {
		if n, err := strconv.ParseUint(hex, 16, 64); err == nil {
			return n, nil
		}
	} else if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return floatToUint(f)
}

func toFloat(v morse.Value) (float64, error) {
	switch v.Type() {
	case morse.TypeFloat:
		return v.Float(), nil
	case morse.TypeInt:
		return float64(v.Int()), nil
	case morse.TypeUint:
		return float64(v.Uint()), nil
	case morse.TypeBool:
		return float64(boolNumber(v.Bool())), nil
	}
	s := v.Str()
	if strings.HasPrefix(s, "0x") {
		// Hexadecimal of any length, as a big integer rounded to the nearest float.
		var i big.Int
		if _, ok := i.SetString(s, 0); !ok {
			return 0, fmt.Errorf("invalid hexadecimal number %q", s)
		}
		f, _ := new(big.Float).SetInt(&i).Float64()
		return f, nil
	}
	return strconv.ParseFloat(s, 64)
}

func toBool(v morse.Value) (bool, error) {
	switch v.Type() {
	case morse.TypeBool:
		return v.Bool(), nil
	case morse.TypeInt:
		return v.Int() > 0, nil
	case morse.TypeUint:
		return v.Uint() > 0, nil
	case morse.TypeFloat:
		return v.Float() > 0, nil
	}
	return strconv.ParseBool(v.Str())
}

// base64Float32 decodes four bytes of base64 as a big-endian IEEE 754 float32.
func base64Float32(v morse.Value) (float64, error) {
	if v.Type() != morse.TypeString {
		return 0, fmt.Errorf("a %s is not base64 text", v.Type())
	}
	b, err := base64.StdEncoding.DecodeString(v.Str())
	if err != nil {
		return 0, err
	}
	if len(b) != 4 {
		return 0, fmt.Errorf("decoded %d bytes, a float32 has 4", len(b))
	}
	return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
}
