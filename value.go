package morse

import (
	"math"
	"strconv"
)

// ValueType is the type of a field value. Line protocol knows exactly these five.
type ValueType uint8

// The field value types.
const (
	TypeInvalid ValueType = iota
	TypeFloat
	TypeInt
	TypeUint
	TypeString
	TypeBool
)

// String names the type the way InfluxDB's error messages do.
func (t ValueType) String() string {
	switch t {
	case TypeFloat:
		return "float"
	case TypeInt:
		return "integer"
	case TypeUint:
		return "unsigned"
	case TypeString:
		return "string"
	case TypeBool:
		return "boolean"
	}
	return "invalid"
}

// Value is a typed field value. It is a small tagged union rather than an interface so that
// building a metric does not box every number on the heap.
type Value struct {
	typ  ValueType
	bits uint64
	str  string
}

// Float makes a float value.
func Float(v float64) Value { return Value{typ: TypeFloat, bits: math.Float64bits(v)} }

// Int makes a signed integer value.
func Int(v int64) Value { return Value{typ: TypeInt, bits: uint64(v)} }

// Uint makes an unsigned integer value.
func Uint(v uint64) Value { return Value{typ: TypeUint, bits: v} }

// String makes a string value.
func String(v string) Value { return Value{typ: TypeString, str: v} }

// Bool makes a boolean value.
func Bool(v bool) Value {
	var b uint64
	if v {
		b = 1
	}
	return Value{typ: TypeBool, bits: b}
}

// Type is the value's type; TypeInvalid for the zero Value.
func (v Value) Type() ValueType { return v.typ }

// Float returns the value as float64; it is meaningful only for TypeFloat.
func (v Value) Float() float64 { return math.Float64frombits(v.bits) }

// Int returns the value as int64; it is meaningful only for TypeInt.
func (v Value) Int() int64 { return int64(v.bits) }

// Uint returns the value as uint64; it is meaningful only for TypeUint.
func (v Value) Uint() uint64 { return v.bits }

// Str returns the value as a string; it is meaningful only for TypeString.
func (v Value) Str() string { return v.str }

// Bool returns the value as a bool; it is meaningful only for TypeBool.
func (v Value) Bool() bool { return v.bits != 0 }

// Interface returns the value as float64, int64, uint64, string or bool (nil if invalid).
func (v Value) Interface() any {
	switch v.typ {
	case TypeFloat:
		return v.Float()
	case TypeInt:
		return v.Int()
	case TypeUint:
		return v.Uint()
	case TypeString:
		return v.str
	case TypeBool:
		return v.Bool()
	}
	return nil
}

// String formats the value for humans and logs, not for line protocol.
func (v Value) String() string {
	switch v.typ {
	case TypeFloat:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case TypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case TypeUint:
		return strconv.FormatUint(v.Uint(), 10)
	case TypeString:
		return strconv.Quote(v.str)
	case TypeBool:
		return strconv.FormatBool(v.Bool())
	}
	return "<invalid>"
}

// ValueOf converts a Go value of a common numeric, string or bool type. Smaller integer types
// widen to int64 or uint64, float32 widens to float64. It reports false for any other type.
func ValueOf(x any) (Value, bool) {
	switch v := x.(type) {
	case float64:
		return Float(v), true
	case float32:
		return Float(float64(v)), true
	case int64:
		return Int(v), true
	case int:
		return Int(int64(v)), true
	case int32:
		return Int(int64(v)), true
	case int16:
		return Int(int64(v)), true
	case int8:
		return Int(int64(v)), true
	case uint64:
		return Uint(v), true
	case uint:
		return Uint(uint64(v)), true
	case uint32:
		return Uint(uint64(v)), true
	case uint16:
		return Uint(uint64(v)), true
	case uint8:
		return Uint(uint64(v)), true
	case string:
		return String(v), true
	case bool:
		return Bool(v), true
	case Value:
		return v, v.typ != TypeInvalid
	}
	return Value{}, false
}
