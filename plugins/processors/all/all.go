// Package all registers every processor plugin.
package all

import (
	_ "github.com/morse-agent/morse/plugins/processors/cardinality" // registers processors.cardinality
	_ "github.com/morse-agent/morse/plugins/processors/converter"   // registers processors.converter
	_ "github.com/morse-agent/morse/plugins/processors/dedup"       // registers processors.dedup
	_ "github.com/morse-agent/morse/plugins/processors/defaults"    // registers processors.defaults
	_ "github.com/morse-agent/morse/plugins/processors/enum"        // registers processors.enum
	_ "github.com/morse-agent/morse/plugins/processors/override"    // registers processors.override
	_ "github.com/morse-agent/morse/plugins/processors/regex"       // registers processors.regex
	_ "github.com/morse-agent/morse/plugins/processors/rename"      // registers processors.rename
	_ "github.com/morse-agent/morse/plugins/processors/strings"     // registers processors.strings
	_ "github.com/morse-agent/morse/plugins/processors/tag_limit"   // registers processors.tag_limit
)
