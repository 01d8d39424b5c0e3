package converter

import (
	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

// convertTags converts the tags that a rule selects, in the order of their keys. A
// converted tag is removed; so is one that fails to convert, except as a timestamp, which
// Telegraf leaves in place.
func (c *Converter) convertTags(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range e.AppendTagKeys(buf[:0]) {
		to, ok := c.tags.find(key)
		if !ok {
			continue
		}
		value, _ := e.Tag(key)
		v := morse.String(value)
		if to == toTimestamp {
			tm, err := c.tags.time.parse(v)
			if err != nil {
				c.fail("tag", key, v, to, err)
				continue
			}
			e.SetTime(tm)
			e.RemoveTag(key)
			continue
		}
		if to == toMeasurement {
			e.SetName(value)
		} else if out, err := convertValue(v, to); err != nil {
			c.fail("tag", key, v, to, err)
		} else {
			e.SetField(key, out)
		}
		e.RemoveTag(key)
	}
}

// convertFields converts the fields that a rule selects, in their order. A field that fails
// to convert is removed, except as a timestamp, which Telegraf leaves in place.
func (c *Converter) convertFields(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range e.AppendFieldKeys(buf[:0]) {
		to, ok := c.fields.find(key)
		if !ok {
			continue
		}
		v, _ := e.Field(key)
		switch to {
		case toMeasurement:
			e.SetName(toString(v))
			e.RemoveField(key)
		case toTag:
			e.SetTag(key, toString(v))
			e.RemoveField(key)
		case toTimestamp:
			tm, err := c.fields.time.parse(v)
			if err != nil {
				c.fail("field", key, v, to, err)
				continue
			}
			e.SetTime(tm)
			e.RemoveField(key)
		default:
			out, err := convertValue(v, to)
			if err != nil {
				c.fail("field", key, v, to, err)
				e.RemoveField(key)
				continue
			}
			e.SetField(key, out)
		}
	}
}

// convertValue converts v to one of the value types.
func convertValue(v morse.Value, to target) (morse.Value, error) {
	switch to {
	case toIntegerType:
		n, err := toInteger(v)
		return morse.Int(n), err
	case toUnsignedType:
		n, err := toUnsigned(v)
		return morse.Uint(n), err
	case toFloatType:
		f, err := toFloat(v)
		return morse.Float(f), err
	case toBooleanType:
		b, err := toBool(v)
		return morse.Bool(b), err
	case toBase64Float:
		f, err := base64Float32(v)
		return morse.Float(f), err
	}
	return morse.String(toString(v)), nil
}
