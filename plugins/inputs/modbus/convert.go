package modbus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// converter turns a field's bytes, as the device sent them, into its value.
type converter func(b []byte) any

// word reads one register's two bytes in the byte order.
func word(order string, b []byte) uint64 {
	if order == "ABCD" || order == "CDAB" {
		return uint64(binary.BigEndian.Uint16(b))
	}
	return uint64(binary.LittleEndian.Uint16(b))
}

// raw reads 2, 4 or 8 bytes as an unsigned number in Telegraf's byte orders: ABCD big
// endian, DCBA little endian, BADC big-endian words with their bytes swapped, CDAB
// little-endian words with big-endian bytes.
func raw(order string, b []byte) uint64 {
	var v uint64
	for i := 0; i+1 < len(b); i += 2 {
		w := word(order, b[i:i+2])
		if order == "ABCD" || order == "BADC" {
			v = v<<16 | w
		} else {
			v |= w << (8 * i)
		}
	}
	return v
}

// float16 decodes an IEEE 754 half-precision number.
func float16(h uint16) float32 {
	sign, exp, frac := uint32(h>>15)<<31, uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch exp {
	case 0: // zero or subnormal: frac * 2^-24
		f := float32(frac) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// numericConverter is Telegraf's conversion of a numeric input type (after byte order) to
// its output: "native" keeps the input's class (and, with a scale, its width, as Telegraf's
// int16(float64(in)*scale) does), INT64, UINT64 or FLOAT64 convert.
func numericConverter(in, order, out string, scale float64) (converter, error) {
	if in == "INT8L" || in == "INT8H" || in == "UINT8L" || in == "UINT8H" {
		if order != "ABCD" && order != "DCBA" {
			return nil, fmt.Errorf("invalid byte-order: %s", order)
		}
	}
	read, err := reader(in, order)
	if err != nil {
		return nil, err
	}
	switch in {
	case "FLOAT16", "FLOAT32", "FLOAT64":
		return floatConverter(in, read, out, scale)
	}
	narrow := narrower(in)
	switch out {
	case "native":
		if scale == 0 {
			return func(b []byte) any { return read(b) }, nil
		}
		return func(b []byte) any { return narrow(toFloat(read(b)) * scale) }, nil
	case "INT64":
		return func(b []byte) any {
			if scale != 0 {
				return int64(toFloat(read(b)) * scale)
			}
			if v, ok := read(b).(uint64); ok {
				return int64(v)
			}
			return read(b)
		}, nil
	case "UINT64":
		return func(b []byte) any {
			if scale != 0 {
				return uint64(toFloat(read(b)) * scale)
			}
			if v, ok := read(b).(int64); ok {
				return uint64(v)
			}
			return read(b)
		}, nil
	case "FLOAT64":
		return func(b []byte) any {
			if scale != 0 {
				return toFloat(read(b)) * scale
			}
			return toFloat(read(b))
		}, nil
	}
	return nil, fmt.Errorf("invalid output data-type: %s", out)
}

// reader decodes an integer input type to int64 or uint64, a float type to float64 from
// its own width.
func reader(in, order string) (func([]byte) any, error) {
	lowIdx, highIdx := 1, 0 // ABCD
	if order == "DCBA" {
		lowIdx, highIdx = 0, 1
	}
	switch in {
	case "INT8L":
		return func(b []byte) any { return int64(int8(b[lowIdx])) }, nil
	case "INT8H":
		return func(b []byte) any { return int64(int8(b[highIdx])) }, nil
	case "UINT8L":
		return func(b []byte) any { return uint64(b[lowIdx]) }, nil
	case "UINT8H":
		return func(b []byte) any { return uint64(b[highIdx]) }, nil
	case "INT16":
		return func(b []byte) any { return int64(int16(raw(order, b))) }, nil
	case "INT32":
		return func(b []byte) any { return int64(int32(raw(order, b))) }, nil
	case "INT64":
		return func(b []byte) any { return int64(raw(order, b)) }, nil
	case "UINT16", "UINT32", "UINT64":
		return func(b []byte) any { return raw(order, b) }, nil
	case "FLOAT16":
		return func(b []byte) any { return float64(float16(uint16(raw(order, b)))) }, nil
	case "FLOAT32":
		return func(b []byte) any { return float64(math.Float32frombits(uint32(raw(order, b)))) }, nil
	case "FLOAT64":
		return func(b []byte) any { return math.Float64frombits(raw(order, b)) }, nil
	}
	return nil, fmt.Errorf("invalid input data-type: %s", in)
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return v.(float64)
}

// narrower converts a scaled value back to the input's own width, as Telegraf's native
// output does, then widens it to int64 or uint64 as a Telegraf metric stores it.
func narrower(in string) func(float64) any {
	switch in {
	case "INT8L", "INT8H":
		return func(f float64) any { return int64(int8(f)) }
	case "UINT8L", "UINT8H":
		return func(f float64) any { return uint64(uint8(f)) }
	case "INT16":
		return func(f float64) any { return int64(int16(f)) }
	case "UINT16":
		return func(f float64) any { return uint64(uint16(f)) }
	case "INT32":
		return func(f float64) any { return int64(int32(f)) }
	case "UINT32":
		return func(f float64) any { return uint64(uint32(f)) }
	case "INT64":
		return func(f float64) any { return int64(f) }
	}
	return func(f float64) any { return uint64(f) }
}

// floatConverter: float inputs convert to native (their float, widened) or FLOAT64 only.
// A scaled native float32 is rounded to float32 first, as Telegraf computes it.
func floatConverter(in string, read func([]byte) any, out string, scale float64) (converter, error) {
	switch out {
	case "native":
		switch {
		case scale == 0:
			return func(b []byte) any { return read(b) }, nil
		case in == "FLOAT16":
			return func(b []byte) any { return float64(float32(read(b).(float64)) * float32(scale)) }, nil
		case in == "FLOAT32":
			return func(b []byte) any { return float64(float32(read(b).(float64) * scale)) }, nil
		}
		fallthrough
	case "FLOAT64":
		if scale == 0 {
			return func(b []byte) any { return read(b) }, nil
		}
		return func(b []byte) any { return read(b).(float64) * scale }, nil
	}
	return nil, fmt.Errorf("invalid output data-type: %s", out)
}

// bitConverter reads one bit of a register: an unsigned 0 or 1 whatever the output.
func bitConverter(order string, bit uint8) converter {
	return func(b []byte) any { return (raw(order, b) >> bit) & 1 }
}

// stringConverter reads registers as text: both bytes of each register, or only the lower
// or upper one (string_register_location), without a trailing NUL.
func stringConverter(order, location string) converter {
	return func(b []byte) any {
		var buf bytes.Buffer
		for i := 0; i+1 < len(b); i += 2 {
			v := word(order, b[i:i+2])
			switch location {
			case "lower":
				buf.WriteByte(byte(v))
			case "upper":
				buf.WriteByte(byte(v >> 8))
			default:
				buf.WriteByte(byte(v >> 8))
				buf.WriteByte(byte(v))
			}
		}
		s, _ := bytes.CutSuffix(buf.Bytes(), []byte{0})
		return string(s)
	}
}

// bitValue is a coil's or discrete input's value: UINT16 (default, an unsigned 0 or 1) or
// BOOL.
func bitValue(out string) (converter, error) {
	switch out {
	case "", "UINT16":
		return func(b []byte) any { return uint64(b[0]) }, nil
	case "BOOL":
		return func(b []byte) any { return b[0] != 0 }, nil
	}
	return nil, fmt.Errorf("invalid output data-type: %s", out)
}
