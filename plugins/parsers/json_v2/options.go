// Package json_v2 is Telegraf's data_format "json_v2": each [[json_v2]] table of an input
// picks values out of a JSON document with GJSON paths, as fields ([[json_v2.field]]),
// tags ([[json_v2.tag]]) or whole objects ([[json_v2.object]], flattened with their keys
// joined by "_"), and builds metrics from them: a path that finds an array gives one
// metric per element, and the metrics of several paths are combined as Telegraf combines
// them (each with each). Numbers are float fields unless a type says otherwise.
package json_v2

import (
	"errors"
	"fmt"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// Options are the json_v2 format's options: the [[json_v2]] tables under the input.
type Options struct {
	// JSONV2 (json_v2) are the tables; each gives its own metrics from every document.
	JSONV2 []Config `toml:"json_v2"`
}

// Config is one [[json_v2]] table.
type Config struct {
	// MeasurementName (measurement_name) names the metrics; empty means the input's name.
	MeasurementName string `toml:"measurement_name"`
	// MeasurementNamePath (measurement_name_path) is a GJSON path to the name, which
	// replaces measurement_name when it leads to a value that is not an object or array.
	MeasurementNamePath string `toml:"measurement_name_path"`
	// TimestampPath (timestamp_path) is a GJSON path to the metrics' time; empty means the
	// time of the parse. A document where it finds nothing is refused.
	TimestampPath string `toml:"timestamp_path"`
	// TimestampFormat (timestamp_format) reads timestamp_path's value: "unix", "unix_ms",
	// "unix_us", "unix_ns" or a Go layout. Required when timestamp_path finds a value: as
	// in Telegraf, a document where it does is refused without it, and the config loads.
	TimestampFormat string `toml:"timestamp_format"`
	// TimestampTimezone (timestamp_timezone) is the zone of layouts without an offset: a tz
	// database name, "Local", or "" for UTC.
	TimestampTimezone string `toml:"timestamp_timezone"`
	// Fields ([[json_v2.field]]) and Tags ([[json_v2.tag]]) pick single values or arrays.
	Fields []DataSet `toml:"field"`
	Tags   []DataSet `toml:"tag"`
	// Objects ([[json_v2.object]]) flatten whole objects or arrays of objects.
	Objects []Object `toml:"object"`
}

// DataSet is one [[json_v2.field]] or [[json_v2.tag]].
type DataSet struct {
	// Path (path) is the GJSON path of the value; required.
	Path string `toml:"path"`
	// Type (type) converts a field: "int", "uint", "float", "bool" or "string"; empty keeps
	// the JSON type (a number is a float). Tags are always strings.
	Type string `toml:"type"`
	// Rename (rename) is the key; empty means the path's last dot-separated word.
	Rename string `toml:"rename"`
	// Optional (optional) lets the path find nothing without refusing the document.
	Optional bool `toml:"optional"`
}

// Object is one [[json_v2.object]].
type Object struct {
	// Path (path) is the GJSON path of the object or array of objects; required.
	Path string `toml:"path"`
	// Optional (optional) lets the path find nothing without refusing the document.
	Optional bool `toml:"optional"`
	// TimestampKey (timestamp_key) is the flattened key of each metric's time, read with
	// TimestampFormat (timestamp_format, required with it) in TimestampTimezone
	// (timestamp_timezone); a document where the key is found is refused without a format.
	TimestampKey      string `toml:"timestamp_key"`
	TimestampFormat   string `toml:"timestamp_format"`
	TimestampTimezone string `toml:"timestamp_timezone"`
	// Renames (renames) maps flattened keys to the keys of the fields or tags.
	Renames map[string]string `toml:"renames"`
	// Fields (fields) maps flattened keys to the type of their field.
	Fields map[string]string `toml:"fields"`
	// Tags (tags) are the flattened keys that are tags.
	Tags []string `toml:"tags"`
	// IncludedKeys (included_keys) keeps only these flattened keys (and the tags);
	// ExcludedKeys (excluded_keys) drops these.
	IncludedKeys []string `toml:"included_keys"`
	ExcludedKeys []string `toml:"excluded_keys"`
	// DisablePrependKeys (disable_prepend_keys) keys nested values by their own key alone,
	// not joined to their parents'.
	DisablePrependKeys bool `toml:"disable_prepend_keys"`
	// FieldPaths ([[json_v2.object.field]]) and TagPaths ([[json_v2.object.tag]]) are GJSON
	// paths within the object: only the values they find are kept, as fields or tags.
	FieldPaths []DataSet `toml:"field"`
	TagPaths   []DataSet `toml:"tag"`
}

// Validate reports every problem of the options at once, each under its path
// (json_v2[0].field[1].path).
func (o *Options) Validate() error {
	if len(o.JSONV2) == 0 {
		return morse.Errorf("json_v2", "data_format json_v2 needs at least one [[json_v2]] table")
	}
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, morse.Errorf(key, format, args...))
	}
	for i, c := range o.JSONV2 {
		at := fmt.Sprintf("json_v2[%d]", i)
		if _, err := timeformat.LoadLocation(c.TimestampTimezone); err != nil {
			add(at+".timestamp_timezone", "%w", err)
		}
		checkSets(add, at+".field", c.Fields, true)
		checkSets(add, at+".tag", c.Tags, false)
		for j, obj := range c.Objects {
			oat := fmt.Sprintf("%s.object[%d]", at, j)
			if obj.Path == "" {
				add(oat+".path", "is required")
			}
			if _, err := timeformat.LoadLocation(obj.TimestampTimezone); err != nil {
				add(oat+".timestamp_timezone", "%w", err)
			}
			for k, typ := range obj.Fields {
				if !validType(typ) {
					add(oat+".fields."+k, "type must be int, uint, float, bool or string, not %q", typ)
				}
			}
			checkSets(add, oat+".field", obj.FieldPaths, true)
			checkSets(add, oat+".tag", obj.TagPaths, false)
		}
	}
	return errors.Join(errs...)
}

func checkSets(add func(string, string, ...any), at string, sets []DataSet, field bool) {
	for i, s := range sets {
		if s.Path == "" {
			add(fmt.Sprintf("%s[%d].path", at, i), "is required")
		}
		if field && !validType(s.Type) {
			add(fmt.Sprintf("%s[%d].type", at, i), "must be int, uint, float, bool or string, not %q", s.Type)
		}
	}
}

func validType(t string) bool {
	switch t {
	case "", "int", "uint", "float", "bool", "string":
		return true
	}
	return false
}
