package health

import (
	"errors"
	"fmt"

	"github.com/morse-agent/morse"
)

// Compares is one [[outputs.health.compares]] table: the comparisons that every metric of
// the batch holding Field must pass, as in Telegraf. A metric without the field is not
// compared; a string value fails the check; a boolean counts as 1 or 0.
type Compares struct {
	// Field is the field key whose values are compared.
	Field string `toml:"field"`
	// GT, GE, LT, LE, EQ and NE are the bounds: the value must be greater than, greater than
	// or equal to, less than, less than or equal to, equal to, and not equal to each that is
	// set.
	GT *float64 `toml:"gt"`
	GE *float64 `toml:"ge"`
	LT *float64 `toml:"lt"`
	LE *float64 `toml:"le"`
	EQ *float64 `toml:"eq"`
	NE *float64 `toml:"ne"`
}

// Contains is one [[outputs.health.contains]] table: at least one metric of the batch must
// hold Field, as in Telegraf.
type Contains struct {
	// Field is the field key that some metric must hold.
	Field string `toml:"field"`
}

// validate names a table without a field, which would never be checked (or never pass).
func (c *Compares) validate(i int) error {
	if c == nil || c.Field == "" {
		return morse.Errorf(fmt.Sprintf("compares[%d].field", i), "is required: the field key whose values are compared")
	}
	return nil
}

func (c *Contains) validate(i int) error {
	if c == nil || c.Field == "" {
		return morse.Errorf(fmt.Sprintf("contains[%d].field", i), "is required: the field key that some metric must hold")
	}
	return nil
}

// check reports whether every metric of batch that holds the field passes every bound, and
// if not, why.
func (c *Compares) check(batch []morse.Metric) error {
	for _, m := range batch {
		v, ok := m.Field(c.Field)
		if !ok {
			continue
		}
		f, ok := asFloat(v)
		if !ok {
			return fmt.Errorf("%s: field %s is a %s, not a number", m.Name(), c.Field, v.Type())
		}
		if bound, ok := c.failed(f); !ok {
			return fmt.Errorf("%s: field %s = %g is not %s", m.Name(), c.Field, f, bound)
		}
	}
	return nil
}

// failed returns the first bound that f does not pass, in Telegraf's order.
func (c *Compares) failed(f float64) (string, bool) {
	for _, b := range []struct {
		op    string
		bound *float64
		pass  func(a, b float64) bool
	}{
		{"> ", c.GT, func(a, b float64) bool { return a > b }},
		{">= ", c.GE, func(a, b float64) bool { return a >= b }},
		{"< ", c.LT, func(a, b float64) bool { return a < b }},
		{"<= ", c.LE, func(a, b float64) bool { return a <= b }},
		{"== ", c.EQ, func(a, b float64) bool { return a == b }},
		{"!= ", c.NE, func(a, b float64) bool { return a != b }},
	} {
		if b.bound != nil && !b.pass(f, *b.bound) {
			return fmt.Sprintf("%s%g", b.op, *b.bound), false
		}
	}
	return "", true
}

// check reports whether some metric of batch holds the field.
func (c *Contains) check(batch []morse.Metric) error {
	for _, m := range batch {
		if _, ok := m.Field(c.Field); ok {
			return nil
		}
	}
	return errors.New("no metric holds field " + c.Field)
}

// asFloat reads a numeric or boolean value as Telegraf's health output does.
func asFloat(v morse.Value) (float64, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		return v.Float(), true
	case morse.TypeInt:
		return float64(v.Int()), true
	case morse.TypeUint:
		return float64(v.Uint()), true
	case morse.TypeBool:
		if v.Bool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
