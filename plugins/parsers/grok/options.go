package grok

import (
	"errors"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// Options are data_format "grok"'s options, with Telegraf 1.39.3's keys.
type Options struct {
	// GrokPatterns (grok_patterns) are the patterns each line is matched with, in order;
	// the first that matches and has a capture name reads the line. Unset means
	// ["%{COMBINED_LOG_FORMAT}"]. Each is trimmed; empty ones are skipped.
	GrokPatterns []string `toml:"grok_patterns"`
	// GrokNamedPatterns (grok_named_patterns) is accepted and has no effect, as in Telegraf
	// 1.39.3, whose grok_patterns replaced it.
	GrokNamedPatterns []string `toml:"grok_named_patterns"`
	// GrokCustomPatterns (grok_custom_patterns) defines patterns, one a line: a NAME, a
	// space, and the pattern. They may replace built-in ones.
	GrokCustomPatterns string `toml:"grok_custom_patterns"`
	// GrokCustomPatternFiles (grok_custom_pattern_files) are files of definitions in the
	// same form, read after grok_custom_patterns; a later definition of a name wins.
	GrokCustomPatternFiles []string `toml:"grok_custom_pattern_files"`
	// GrokMultiline (grok_multiline) matches each payload whole, newlines included,
	// instead of line by line.
	GrokMultiline bool `toml:"grok_multiline"`
	// GrokTimezone (grok_timezone) is the zone of timestamps that have no offset: unset or
	// "UTC", "Local" (the machine's), or an IANA name such as "Europe/Berlin".
	GrokTimezone string `toml:"grok_timezone"`
	// GrokUniqueTimestamp (grok_unique_timestamp) is "auto" (unset) to move a timestamp
	// equal to the previous metric's on by a small step, so that a store does not
	// overwrite one metric with the next; "disable" keeps timestamps as read.
	GrokUniqueTimestamp string `toml:"grok_unique_timestamp"`
}

// Validate reports every problem of the options: an unknown time zone or
// grok_unique_timestamp value, unreadable pattern files, and each pattern that does not
// compile.
func (o *Options) Validate() error {
	_, _, err := o.build()
	return err
}

// build checks the options and compiles the patterns, reporting every problem.
func (o *Options) build() ([]*pattern, *time.Location, error) {
	loc, locErr := o.location()
	patterns, err := compile(o)
	return patterns, loc, errors.Join(locErr, o.checkUnique(), err)
}

// location is grok_timezone's location. Telegraf warns of a zone it cannot load and uses
// UTC; morse refuses it, as it would shift every timestamp read without an offset.
func (o *Options) location() (*time.Location, error) {
	loc, err := timeformat.LoadLocation(o.GrokTimezone)
	if err != nil {
		return nil, morse.Errorf("grok_timezone", "unknown time zone %q (an IANA name such as \"Europe/Berlin\", \"UTC\" or \"Local\")", o.GrokTimezone)
	}
	return loc, nil
}

// checkUnique refuses a value other than "auto" and "disable"; Telegraf takes any other
// value for "disable".
func (o *Options) checkUnique() error {
	switch o.GrokUniqueTimestamp {
	case "", "auto", "disable":
		return nil
	}
	return morse.Errorf("grok_unique_timestamp", "must be \"auto\" or \"disable\", got %q", o.GrokUniqueTimestamp)
}

// patterns are grok_patterns trimmed, without empty ones, or the default.
func (o *Options) patterns() []string {
	if len(o.GrokPatterns) == 0 {
		return []string{"%{COMBINED_LOG_FORMAT}"}
	}
	var out []string
	for _, p := range o.GrokPatterns {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
