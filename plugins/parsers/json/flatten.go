package json

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// kind is the JSON type of a flattened value.
type kind uint8

const (
	kindNum kind = iota
	kindStr
	kindBool
)

// entry is one flattened value, in document order.
type entry struct {
	key     string
	kind    kind
	dropped bool // replaced by a later duplicate key, or taken as the time
	b       bool
	num     float64
	str     string
}

// dedupAt is the number of entries from which flatten finds a duplicate key by a map
// rather than a scan.
const dedupAt = 32

// flatten appends the values under v to p.flat, keyed by their path joined with "_".
func (p *Parser) flatten(key string, v gjson.Result) error {
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.Number:
		if math.IsInf(v.Num, 0) {
			return &rangeError{at: v.Index, raw: v.Raw}
		}
		p.add(entry{key: key, kind: kindNum, num: v.Num})
	case gjson.String:
		p.add(entry{key: key, kind: kindStr, str: validUTF8(v.Str)})
	case gjson.True, gjson.False:
		p.add(entry{key: key, kind: kindBool, b: v.Type == gjson.True})
	case gjson.JSON:
		return p.children(key, v)
	default:
		return errNotValue
	}
	return nil
}

// children flattens the members of an object or the elements of an array. A member of the
// top object keeps its key as it is, a slice of the document, without allocating.
func (p *Parser) children(prefix string, v gjson.Result) error {
	var err error
	i := 0
	isArray := v.IsArray()
	v.ForEach(func(k, e gjson.Result) bool {
		var key string
		switch {
		case isArray && prefix == "":
			key = strconv.Itoa(i)
		case isArray:
			key = prefix + "_" + strconv.Itoa(i)
		case prefix == "":
			key = validUTF8(k.Str)
		default:
			key = prefix + "_" + validUTF8(k.Str)
		}
		i++
		err = p.flatten(key, e)
		return err == nil
	})
	return err
}

// add appends a value; a key seen before in the object is replaced, the last one winning
// as in Telegraf's map. Large objects find duplicates through p.index.
func (p *Parser) add(e entry) {
	n := len(p.flat)
	switch {
	case n < dedupAt:
		for i := range p.flat {
			if p.flat[i].key == e.key && !p.flat[i].dropped {
				p.flat[i].dropped = true
				break
			}
		}
	default:
		if n == dedupAt {
			if p.index == nil {
				p.index = make(map[string]int, 2*dedupAt)
			}
			for i := range p.flat {
				if !p.flat[i].dropped {
					p.index[p.flat[i].key] = i
				}
			}
		}
		if i, ok := p.index[e.key]; ok {
			p.flat[i].dropped = true
		}
		p.index[e.key] = n
	}
	p.flat = append(p.flat, e)
}

// validUTF8 replaces each byte that is not UTF-8 with U+FFFD, as encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
