// Package config reads morse's Telegraf-style TOML configuration and builds from it a
// Config, which an agent.Agent runs.
//
// Load reads the files, directories and in-memory sources that Options names, in order.
// Read merges their text: $VAR and ${VAR} references are substituted first, as Telegraf
// substitutes them (internal/envsubst), [global_tags] and [agent] are merged key by key
// with the later text winning, and plugin tables are appended in order. Load then builds each plugin: it looks the name up in the registry, creates the
// plugin with its defaults, decodes its table into it (unknown keys are errors), validates
// it and gives it its filter. Every problem of every file and plugin is reported at once,
// as Errors that name the file, line and key; a config with any problem is refused whole,
// so that a reload never runs half of one.
//
// [agent] is AgentConfig. The options that every plugin of a kind has besides its own
// (alias, interval, name_override, the filters, tags, an output's flush and buffer
// settings) are InputCommon, OutputCommon, ProcessorCommon and AggregatorCommon. A program
// may instead build a Config in code: DefaultConfig, then AddInput, AddOutput, AddProcessor
// and AddAggregator. SampleConfig writes the complete config that `morse config` prints.
//
// The package knows plugins only through package morse's interfaces and registry, and it
// runs nothing: no plugin is initialised, connected or started here.
package config
