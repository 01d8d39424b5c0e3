// Package json is Telegraf's data_format "json": it flattens a JSON object, or each object of
// an array, into the fields of one metric. Nested objects' keys are joined with "_"
// (b.c gives b_c), array elements are numbered (list.0 gives list_0), every number is a
// float field, and strings and booleans are kept only as tags (tag_keys) or as fields
// (json_string_fields). json_query (a GJSON path) picks the part of the document to read;
// json_name_key, json_time_key and json_time_format take the measurement and the time from
// the document.
//
// It is not the JSON shape that morse's serializer writes ({"name","tags","fields",
// "timestamp"}): that is read by plugins/parsers/metricjson.
package json

import (
	"errors"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// Options are the json format's options, with Telegraf's keys.
type Options struct {
	// JSONQuery (json_query) is a GJSON path to the object or array of objects to read;
	// empty reads the whole document. A path that finds nothing gives no metric.
	JSONQuery string `toml:"json_query"`
	// TagKeys (tag_keys) are globs of the flattened keys whose values become tags, numbers
	// and booleans included, instead of fields.
	TagKeys []string `toml:"tag_keys"`
	// JSONStringFields (json_string_fields) are globs of the flattened keys whose string or
	// boolean values are kept as fields; other strings and booleans are left out.
	JSONStringFields []string `toml:"json_string_fields"`
	// JSONNameKey (json_name_key) is the flattened key whose string value is the
	// measurement; empty, or a key that is missing or not a string, leaves the input's name.
	JSONNameKey string `toml:"json_name_key"`
	// JSONTimeKey (json_time_key) is the flattened key holding the metric's time; it is not
	// a field. Empty uses the time of the parse, one for the whole payload.
	JSONTimeKey string `toml:"json_time_key"`
	// JSONTimeFormat (json_time_format) reads json_time_key's value: "unix", "unix_ms",
	// "unix_us", "unix_ns" (a number, or a string holding one), or a Go layout such as
	// "2006-01-02T15:04:05Z07:00". Required with json_time_key.
	JSONTimeFormat string `toml:"json_time_format"`
	// JSONTimezone (json_timezone) is the zone of times whose layout has no offset: a tz
	// database name such as "America/New_York", "Local", or "" or "UTC" for UTC.
	JSONTimezone string `toml:"json_timezone"`
	// JSONStrict (json_strict), when the document is an array, refuses the whole array if one
	// of its objects cannot be read (its time is missing or unreadable); false keeps the
	// others. Unset means true, Telegraf's default.
	JSONStrict *bool `toml:"json_strict"`
}

// Validate reports every problem of the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.JSONTimeKey != "" && o.JSONTimeFormat == "" {
		errs = append(errs, morse.Errorf("json_time_format", "is required with json_time_key (%q)", o.JSONTimeKey))
	}
	if _, err := timeformat.LoadLocation(o.JSONTimezone); err != nil {
		errs = append(errs, morse.Errorf("json_timezone", "%w", err))
	}
	if _, err := glob.Compile("tag_keys", o.TagKeys); err != nil {
		errs = append(errs, err)
	}
	if _, err := glob.Compile("json_string_fields", o.JSONStringFields); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// strict is json_strict with its default.
func (o *Options) strict() bool { return o.JSONStrict == nil || *o.JSONStrict }
