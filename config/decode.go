package config

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// unmarshalerTOML is BurntSushi/toml's Unmarshaler, repeated here so that types such as
// morse.Duration and morse.Size decode the same way through this decoder as through the library.
type unmarshalerTOML interface {
	UnmarshalTOML(any) error
}

var (
	typeTime     = reflect.TypeFor[time.Time]()
	typeDuration = reflect.TypeFor[time.Duration]()
)

// problem is one key that could not be decoded. Path is relative to the decoded table, in the
// lineIndex format.
type problem struct {
	Path string
	Msg  string
}

// decoder turns the generic values of a parsed TOML document (map[string]any, []any,
// []map[string]any, string, int64, float64, bool, time.Time) into Go values.
//
// It exists instead of the library's own decoding for two reasons: it goes on after a bad
// value, so that every problem of a table is reported in one run, and it reports each
// problem with the path of its key, including keys that no struct field takes.
type decoder struct {
	problems []problem
	// unknown receives keys of the top-level struct that no field takes. Nil means that they
	// are problems. Keys of nested tables that no field takes are always problems.
	unknown func(key string, value any)
	// unknownKeys counts the problems that are keys no field takes: they leave the struct
	// as decoded as without the key, so the plugin can still validate itself in the same run.
	unknownKeys int
}

func (d *decoder) fail(path, format string, args ...any) {
	d.problems = append(d.problems, problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// unknownKey records a key that no field takes.
func (d *decoder) unknownKey(path string) {
	d.problems = append(d.problems, problem{Path: path, Msg: "unknown key"})
	d.unknownKeys++
}

// onlyUnknown reports whether every problem is an unknown key, so that the decoded value
// is whole: each key that a field takes was decoded.
func (d *decoder) onlyUnknown() bool {
	return len(d.problems) == d.unknownKeys
}

// table decodes the keys of m into the struct that rv points to or holds.
func (d *decoder) table(path string, m map[string]any, rv reflect.Value) {
	unknown := d.unknown
	d.unknown = nil // only the top level may hand keys back
	fields := structFields(rv.Type())
	for _, key := range sortedKeys(m) {
		kp := joinPath(path, key)
		f, ok := fields.find(key)
		if !ok {
			if unknown != nil {
				unknown(key, m[key])
			} else {
				d.unknownKey(kp)
			}
			continue
		}
		fv, ok := fieldByIndex(rv, f.index)
		if !ok {
			d.fail(kp, "cannot be set (a nil embedded pointer to an unexported type)")
			continue
		}
		d.value(kp, m[key], fv)
	}
}

// value decodes data into rv, which must be settable.
func (d *decoder) value(path string, data any, rv reflect.Value) {
	if rv.Kind() == reflect.Pointer {
		elem := reflect.New(rv.Type().Elem())
		if !rv.IsNil() {
			elem.Elem().Set(rv.Elem())
		}
		n := len(d.problems)
		d.value(path, data, elem.Elem())
		if len(d.problems) == n {
			rv.Set(elem)
		}
		return
	}
	if rv.Type() == typeTime {
		// time.Time is a TextUnmarshaler too, but TOML has datetimes of its own.
		d.structure(path, data, rv)
		return
	}
	if rv.CanAddr() {
		switch u := rv.Addr().Interface().(type) {
		case unmarshalerTOML:
			if err := u.UnmarshalTOML(data); err != nil {
				d.fail(path, "%s", err.Error())
			}
			return
		case encoding.TextUnmarshaler:
			s, ok := data.(string)
			if !ok {
				d.fail(path, "expected a string, got %s", tomlType(data))
				return
			}
			if err := u.UnmarshalText([]byte(s)); err != nil {
				d.fail(path, "%s", err.Error())
			}
			return
		}
	}
	d.plain(path, data, rv)
}

// plain decodes into a value of a basic kind, a collection or a struct.
func (d *decoder) plain(path string, data any, rv reflect.Value) {
	switch rv.Kind() {
	case reflect.String:
		if s, ok := data.(string); ok {
			rv.SetString(s)
			return
		}
	case reflect.Bool:
		if b, ok := data.(bool); ok {
			rv.SetBool(b)
			return
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.integer(path, data, rv)
		return
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.unsigned(path, data, rv)
		return
	case reflect.Float32, reflect.Float64:
		d.float(path, data, rv)
		return
	case reflect.Slice, reflect.Array:
		d.list(path, data, rv)
		return
	case reflect.Map:
		d.mapping(path, data, rv)
		return
	case reflect.Struct:
		d.structure(path, data, rv)
		return
	case reflect.Interface:
		if rv.NumMethod() == 0 {
			rv.Set(reflect.ValueOf(data))
			return
		}
		d.fail(path, "cannot decode into %s", rv.Type())
		return
	default:
		d.fail(path, "cannot decode into %s", rv.Type())
		return
	}
	d.fail(path, "expected %s, got %s", goKind(rv.Type()), tomlType(data))
}

func (d *decoder) integer(path string, data any, rv reflect.Value) {
	if rv.Type() == typeDuration {
		// A bare time.Duration has no unit of its own in TOML, so only strings are taken.
		s, ok := data.(string)
		if !ok {
			d.fail(path, "expected a duration string like \"10s\", got %s", tomlType(data))
			return
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			d.fail(path, "invalid duration %q: write it like \"10s\", \"1m\" or \"500ms\"", s)
			return
		}
		rv.SetInt(int64(v))
		return
	}
	n, ok := data.(int64)
	if !ok {
		d.fail(path, "expected an integer, got %s", tomlType(data))
		return
	}
	if rv.OverflowInt(n) {
		bits := rv.Type().Bits()
		d.fail(path, "%d is out of range (%d to %d)", n, int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
		return
	}
	rv.SetInt(n)
}

func (d *decoder) unsigned(path string, data any, rv reflect.Value) {
	n, ok := data.(int64)
	if !ok {
		d.fail(path, "expected an integer, got %s", tomlType(data))
		return
	}
	if n < 0 {
		d.fail(path, "must not be negative")
		return
	}
	if rv.OverflowUint(uint64(n)) {
		d.fail(path, "%d is out of range (0 to %d)", n, uint64(1)<<rv.Type().Bits()-1)
		return
	}
	rv.SetUint(uint64(n))
}

func (d *decoder) float(path string, data any, rv reflect.Value) {
	switch x := data.(type) {
	case float64:
		rv.SetFloat(x)
	case int64:
		rv.SetFloat(float64(x))
	default:
		d.fail(path, "expected a number, got %s", tomlType(data))
	}
}

// list decodes a TOML array into a slice or a fixed-size array.
func (d *decoder) list(path string, data any, rv reflect.Value) {
	items := arrayItems(data)
	if items == nil {
		d.fail(path, "expected an array, got %s", tomlType(data))
		return
	}
	var out reflect.Value
	if rv.Kind() == reflect.Array {
		if len(items) != rv.Len() {
			d.fail(path, "expected an array of %d elements, got %d", rv.Len(), len(items))
			return
		}
		out = reflect.New(rv.Type()).Elem()
	} else {
		out = reflect.MakeSlice(rv.Type(), len(items), len(items))
	}
	n := len(d.problems)
	for i, item := range items {
		d.value(indexPath(path, i), item, out.Index(i))
	}
	if len(d.problems) == n {
		rv.Set(out)
	}
}

func (d *decoder) mapping(path string, data any, rv reflect.Value) {
	m, ok := data.(map[string]any)
	if !ok {
		d.fail(path, "expected a table, got %s", tomlType(data))
		return
	}
	if rv.Type().Key().Kind() != reflect.String {
		d.fail(path, "cannot decode into %s: map keys must be strings", rv.Type())
		return
	}
	out := reflect.MakeMapWithSize(rv.Type(), len(m))
	n := len(d.problems)
	for _, k := range sortedKeys(m) {
		ev := reflect.New(rv.Type().Elem()).Elem()
		d.value(joinPath(path, k), m[k], ev)
		out.SetMapIndex(reflect.ValueOf(k).Convert(rv.Type().Key()), ev)
	}
	if len(d.problems) == n {
		rv.Set(out)
	}
}

func (d *decoder) structure(path string, data any, rv reflect.Value) {
	if rv.Type() == typeTime {
		t, ok := data.(time.Time)
		if !ok {
			d.fail(path, "expected a datetime, got %s", tomlType(data))
			return
		}
		rv.Set(reflect.ValueOf(t))
		return
	}
	m, ok := data.(map[string]any)
	if !ok {
		d.fail(path, "expected a table, got %s", tomlType(data))
		return
	}
	d.table(path, m, rv)
}

// arrayItems returns the elements of a TOML array, whichever slice type the parser chose, or
// nil when data is not an array.
func arrayItems(data any) []any {
	switch x := data.(type) {
	case []any:
		if x == nil {
			return []any{}
		}
		return x
	case []map[string]any:
		items := make([]any, len(x))
		for i, m := range x {
			items[i] = m
		}
		return items
	}
	return nil
}

// tomlType names the TOML type of a parsed value, with an article, for error messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a datetime"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// goKind names what a Go type expects, in TOML words.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return t.String()
}

// field is one decodable struct field: its TOML key and its index path through embedded
// structs.
type field struct {
	key   string
	name  string
	index []int
}

type fieldList []field

// find matches a key the way BurntSushi/toml does: the toml tag or field name exactly, then
// either one ignoring case.
func (fl fieldList) find(key string) (field, bool) {
	for _, f := range fl {
		if f.key == key {
			return f, true
		}
	}
	for _, f := range fl {
		if strings.EqualFold(f.key, key) || strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return field{}, false
}

// structFields lists the fields of t that keys can set, including those promoted from
// untagged embedded structs. Fields tagged toml:"-" and unexported fields are left out.
func structFields(t reflect.Type) fieldList {
	var out fieldList
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if tag == "-" {
			continue
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
			for _, f := range structFields(ft) {
				f.index = append([]int{i}, f.index...)
				out = append(out, f)
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		key := tag
		if key == "" {
			key = sf.Name
		}
		out = append(out, field{key: key, name: sf.Name, index: []int{i}})
	}
	return out
}

// fieldByIndex is reflect.Value.FieldByIndex that allocates nil embedded pointers on the way.
func fieldByIndex(rv reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				if !rv.CanSet() {
					return reflect.Value{}, false
				}
				rv.Set(reflect.New(rv.Type().Elem()))
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv, rv.CanSet()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
