package json_test

import (
	"bytes"
	stdjson "encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// FuzzParse compares the parser with a reference built on encoding/json the way Telegraf's
// parser is (decode to maps, flatten, keep every value with json_string_fields = ["*"]): the
// same payloads are refused, and the others give the same fields. Documents where the two
// may rightly differ are left out of the comparison: flattened keys that collide (Telegraf's
// winner depends on map order) and objects with a key twice.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a": 5, "b": {"c": 6}}`, `[{"a": 5}, {"b": [1, true, "x", null]}]`, `null`, `[]`, `1`,
		`{"a": "\u00e9\ud800", "a_b": 1, "a": {"b": 2}}`, "\ufeff {\"x\": 1e400}", `[{"a":1},2]`, `{"a":1}{"b":2}`} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile("testdata/benchmark.json"); err == nil {
		f.Add(data)
	}
	p := newParser(f, `json_string_fields = ["*"]`)
	f.Fuzz(func(t *testing.T, in []byte) {
		var got []map[string]any
		err := p.Parse(in, func(m morse.Metric) {
			fields := map[string]any{}
			for _, fl := range m.Fields() {
				fields[fl.Key] = fl.Value.Interface()
			}
			got = append(got, fields)
		})
		if err != nil {
			var pe *parsers.Error
			require.ErrorAs(t, err, &pe)
			require.Positive(t, pe.Refused)
			require.NotEmpty(t, pe.Entries)
		}
		want, refused, comparable := reference(in)
		if !comparable {
			return
		}
		if refused {
			require.Error(t, err)
			require.Empty(t, got)
			return
		}
		require.Equal(t, want, got)
	})
}

// reference parses as Telegraf does; objects left without fields are dropped.
func reference(in []byte) (out []map[string]any, refused, comparable bool) {
	in = bytes.TrimPrefix(bytes.TrimSpace(in), []byte("\xef\xbb\xbf"))
	if len(in) == 0 {
		return nil, false, true
	}
	var doc any
	if err := stdjson.Unmarshal(in, &doc); err != nil {
		return nil, true, true
	}
	if hasDuplicateKey(in) {
		return nil, false, false
	}
	var objects []map[string]any
	switch v := doc.(type) {
	case nil:
	case map[string]any:
		objects = append(objects, v)
	case []any:
		for _, e := range v {
			o, ok := e.(map[string]any)
			if !ok {
				return nil, true, true
			}
			objects = append(objects, o)
		}
	default:
		return nil, true, true
	}
	for _, o := range objects {
		fields := map[string]any{}
		if !flattenInto(fields, "", o) {
			return nil, false, false
		}
		if len(fields) > 0 {
			out = append(out, fields)
		}
	}
	return out, false, true
}

// flattenInto flattens v into fields; false if two values get one key.
func flattenInto(fields map[string]any, key string, v any) bool {
	join := func(k string) string {
		if key == "" {
			return k
		}
		return key + "_" + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !flattenInto(fields, join(k), e) {
				return false
			}
		}
	case []any:
		for i, e := range v {
			if !flattenInto(fields, join(strconv.Itoa(i)), e) {
				return false
			}
		}
	case nil:
	default:
		if _, dup := fields[key]; dup {
			return false
		}
		fields[key] = v
	}
	return true
}

// hasDuplicateKey reports whether an object of a valid document has a key twice.
func hasDuplicateKey(in []byte) bool {
	dec := stdjson.NewDecoder(bytes.NewReader(in))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.object && top.key
		if top != nil && top.object {
			top.key = !top.key
		}
		switch tok := tok.(type) {
		case stdjson.Delim:
			switch tok {
			case '{':
				stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					// The closed container was a value: the next token is a key.
					stack[len(stack)-1].key = true
				}
			}
		case string:
			if isKey {
				if top.seen[tok] {
					return true
				}
				top.seen[tok] = true
			}
		}
	}
}
