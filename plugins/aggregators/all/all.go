// Package all registers every aggregator plugin.
package all

import (
	_ "github.com/morse-agent/morse/plugins/aggregators/basicstats" // registers aggregators.basicstats
	_ "github.com/morse-agent/morse/plugins/aggregators/final"      // registers aggregators.final
	_ "github.com/morse-agent/morse/plugins/aggregators/merge"      // registers aggregators.merge
	_ "github.com/morse-agent/morse/plugins/aggregators/minmax"     // registers aggregators.minmax
)
