// Package all registers every plugin that morse ships; the binary imports it, and so can a
// program that embeds the agent and wants the same plugins.
package all

import (
	_ "github.com/morse-agent/morse/plugins/aggregators/all" // registers every aggregator
	_ "github.com/morse-agent/morse/plugins/inputs/all"      // registers every input
	_ "github.com/morse-agent/morse/plugins/outputs/all"     // registers every output
	_ "github.com/morse-agent/morse/plugins/processors/all"  // registers every processor
)
