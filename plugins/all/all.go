// Package all registers every plugin that morse ships; the binary imports it, and so can a
// program that embeds the agent and wants the same plugins. A build tagged `custom` registers
// only the plugins its other tags name (`make build PLUGINS="inputs.cpu outputs.influxdb"`);
// see plugins/all/gen.
package all

//go:generate go run ./gen -root ../..

import (
	_ "github.com/morse-agent/morse/plugins/aggregators/all" // registers the aggregators built in
	_ "github.com/morse-agent/morse/plugins/inputs/all"      // registers the inputs built in
	_ "github.com/morse-agent/morse/plugins/outputs/all"     // registers the outputs built in
	_ "github.com/morse-agent/morse/plugins/processors/all"  // registers the processors built in
)
