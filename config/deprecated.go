package config

import (
	"fmt"
	"reflect"
	"slices"
)

// Merge says how a Telegraf option that was removed or renamed joins its replacement when
// morse maps it. Each is what Telegraf did while it still read the option.
type Merge int

// The ways an old option joins its replacement.
const (
	// MergeFill sets the replacement from the old option when the replacement is not set;
	// a replacement that is set wins (ssl_ca and tls_ca).
	MergeFill Merge = iota
	// MergeAppend appends the old value to the replacement's list (outputs.influxdb url).
	MergeAppend
	// MergeReplace puts the old value in place of the replacement's (inputs.disk mountpoints).
	MergeReplace
	// MergeOr sets the replacement to true when the old boolean is true
	// (inputs.statsd parse_data_dog_tags).
	MergeOr
	// MergeAdd adds the values of Deprecation.Adds to the replacement's list, starting from
	// the plugin's default when the table leaves the replacement out, when the old boolean
	// is true (inputs.procstat pid_tag, inputs.docker perdevice).
	MergeAdd
	// MergeDrop removes the option: it had no effect in Telegraf either.
	MergeDrop
	// MergePlugin leaves the option to the plugin, which still reads it as Telegraf 1.39.3
	// does; the loader only warns.
	MergePlugin
)

// Deprecation is one Telegraf option that older configs still carry, and what morse does
// with it. The table is the one source of truth for loading (one warning each, the value
// mapped) and for `morse config check`.
type Deprecation struct {
	// Kind is KindInputs, KindOutputs, KindProcessors, KindAggregators, or "agent".
	Kind string
	// Plugin names the plugin; "" means every plugin of Kind that takes Replacement (the
	// TLS client options any plugin may embed).
	Plugin string
	// Option is the old key; Replacement the key that takes its value ("" with MergeDrop).
	Option, Replacement string
	Merge               Merge
	// Adds are the values MergeAdd adds.
	Adds []string
	// Since is the Telegraf version that deprecated the option; Removed the one that
	// dropped it, "" while Telegraf 1.39.3 still reads it.
	Since, Removed string
}

// Deprecations are the options that Telegraf deprecated or removed, from its 1.39.3
// config/deprecation.go, its plugins' `deprecated` struct tags, and the tags of the
// releases that removed them, for the plugins morse has and those it may have later: an
// entry whose plugin is not registered, or does not take Replacement, applies to nothing.
var Deprecations = []Deprecation{
	{Kind: KindInputs, Option: "ssl_ca", Replacement: "tls_ca", Since: "1.7.0", Removed: "1.35.0"},
	{Kind: KindInputs, Option: "ssl_cert", Replacement: "tls_cert", Since: "1.7.0", Removed: "1.35.0"},
	{Kind: KindInputs, Option: "ssl_key", Replacement: "tls_key", Since: "1.7.0", Removed: "1.35.0"},
	{Kind: KindOutputs, Option: "ssl_ca", Replacement: "tls_ca", Since: "1.7.0", Removed: "1.35.0"},
	{Kind: KindOutputs, Option: "ssl_cert", Replacement: "tls_cert", Since: "1.7.0", Removed: "1.35.0"},
	{Kind: KindOutputs, Option: "ssl_key", Replacement: "tls_key", Since: "1.7.0", Removed: "1.35.0"},
	{Kind: KindOutputs, Plugin: "influxdb", Option: "url", Replacement: "urls", Merge: MergeAppend, Since: "0.1.9", Removed: "1.30.0"},
	{Kind: KindOutputs, Plugin: "influxdb", Option: "precision", Merge: MergeDrop, Since: "1.0.0", Removed: "1.35.0"},
	{Kind: KindInputs, Plugin: "disk", Option: "mountpoints", Replacement: "mount_points", Merge: MergeReplace, Since: "0.10.2", Removed: "1.30.0"},
	{Kind: KindInputs, Plugin: "docker", Option: "container_names", Replacement: "container_name_include", Merge: MergeAppend, Since: "1.4.0", Removed: "1.35.0"},
	{Kind: KindInputs, Plugin: "docker", Option: "perdevice", Replacement: "perdevice_include", Merge: MergeAdd, Adds: []string{"network", "blkio"}, Since: "1.18.0", Removed: "1.35.0"},
	{Kind: KindInputs, Plugin: "statsd", Option: "parse_data_dog_tags", Replacement: "datadog_extensions", Merge: MergeOr, Since: "1.10.0", Removed: "1.35.0"},
	{Kind: KindInputs, Plugin: "statsd", Option: "udp_packet_size", Merge: MergeDrop, Since: "0.12.1", Removed: "1.35.0"},
	{Kind: KindInputs, Plugin: "modbus", Option: "debug_connection", Merge: MergeDrop, Since: "1.35.0"},
	{Kind: KindInputs, Plugin: "procstat", Option: "pid_tag", Replacement: "tag_with", Merge: MergePlugin, Since: "1.29.0"},
	{Kind: KindInputs, Plugin: "procstat", Option: "cmdline_tag", Replacement: "tag_with", Merge: MergePlugin, Since: "1.29.0"},
	{Kind: KindInputs, Plugin: "procstat", Option: "supervisor_unit", Replacement: "supervisor_units", Merge: MergePlugin, Since: "1.29.0"},
	{Kind: KindInputs, Plugin: "tail", Option: "from_beginning", Replacement: "initial_read_offset", Merge: MergePlugin, Since: "1.34.0"},
	{Kind: "agent", Option: "flush_buffer_when_full", Merge: MergeDrop, Since: "0.13.0", Removed: "1.35.0"},
	{Kind: "agent", Option: "utc", Merge: MergeDrop, Since: "1.0.0", Removed: "1.35.0"},
}

// docker's total (→ total_include) is left out: its meaning depended on total_include's
// own value in a way that no single mapping keeps, so such a config is refused as an unknown
// key and the operator chooses.

// FindDeprecation returns the entry for option in a plugin of kind and name that takes
// the keys accepts says it takes (nil: any), or false.
func FindDeprecation(kind, name, option string, accepts func(key string) bool) (Deprecation, bool) {
	for _, d := range Deprecations {
		if d.Kind != kind || d.Option != option || (d.Plugin != "" && d.Plugin != name) {
			continue
		}
		if d.Replacement != "" && d.Merge != MergePlugin && accepts != nil && !accepts(d.Replacement) {
			continue
		}
		if d.Merge == MergePlugin && accepts != nil && !accepts(d.Option) {
			continue
		}
		return d, true
	}
	return Deprecation{}, false
}

// Notice says what happened to the option and what to write instead, for the warning.
func (d Deprecation) Notice(bothSet bool) string {
	var s string
	if d.Removed != "" {
		s = fmt.Sprintf("removed in Telegraf %s (deprecated since %s)", d.Removed, d.Since)
	} else {
		s = fmt.Sprintf("deprecated in Telegraf since %s", d.Since)
	}
	switch d.Merge {
	case MergeDrop:
		return s + ": it has no effect, as in Telegraf; remove it"
	case MergePlugin:
		return s + fmt.Sprintf(": morse still reads it, as Telegraf 1.39.3 does; use %s instead", d.Replacement)
	}
	s += fmt.Sprintf(": morse reads it as %s; use %s instead", d.Replacement, d.Replacement)
	if bothSet {
		switch d.Merge {
		case MergeFill:
			s += fmt.Sprintf(" (%s is set too and wins, as in Telegraf)", d.Replacement)
		case MergeAppend:
			s += fmt.Sprintf(" (its value is added to %s, as in Telegraf)", d.Replacement)
		case MergeReplace:
			s += fmt.Sprintf(" (it replaces the %s that is set too, as in Telegraf)", d.Replacement)
		case MergeOr, MergeAdd:
			s += fmt.Sprintf(" (combined with the %s that is set too, as in Telegraf)", d.Replacement)
		}
	}
	return s
}

// apply maps the old option in m, a table's keys, onto its replacement. def gives the
// replacement's default, for MergeAdd. It returns whether the replacement was set too.
func (d Deprecation) apply(m map[string]any, def func(key string) any) bool {
	old := m[d.Option]
	cur, both := m[d.Replacement]
	switch d.Merge {
	case MergeDrop:
		delete(m, d.Option)
		return false
	case MergePlugin:
		return both
	}
	delete(m, d.Option)
	switch d.Merge {
	case MergeFill:
		if !both {
			m[d.Replacement] = old
		}
	case MergeAppend:
		list := arrayItems(cur)
		if !both {
			list = nil
		}
		if items := arrayItems(old); items != nil {
			m[d.Replacement] = append(slices.Clone(list), items...)
		} else {
			m[d.Replacement] = append(slices.Clone(list), old)
		}
	case MergeReplace:
		m[d.Replacement] = old
	case MergeOr:
		if b, _ := old.(bool); b {
			m[d.Replacement] = true
		}
	case MergeAdd:
		if b, _ := old.(bool); !b {
			break
		}
		if !both {
			cur = def(d.Replacement)
		}
		list := slices.Clone(arrayItems(cur))
		for _, a := range d.Adds {
			if !slices.Contains(list, any(a)) {
				list = append(list, a)
			}
		}
		m[d.Replacement] = list
	}
	return both
}

// deprecations maps the plugin's deprecated options in its own keys, before they are
// decoded, and notes a warning for each.
func (p *Plugin) deprecations(plugin any) {
	accepts, def := pluginKeys(plugin)
	for _, key := range sortedKeys(p.rest) {
		d, ok := FindDeprecation(p.Kind, p.Name, key, accepts)
		if !ok {
			continue
		}
		line := p.KeyLine(key)
		both := d.apply(p.rest, def)
		p.warnings = append(p.warnings, Warning{File: p.File, Line: line, Key: joinPath(p.ID(), key), Msg: d.Notice(both)})
	}
}

// pluginKeys tells which top-level keys a plugin's struct takes, and the default value of
// one as TOML would write it (a []string as []any). A plugin that decodes itself takes any.
func pluginKeys(plugin any) (func(string) bool, func(string) any) {
	rv := reflect.ValueOf(plugin)
	if _, self := plugin.(unmarshalerTOML); self || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil, func(string) any { return nil }
	}
	fields := structFields(rv.Elem().Type())
	accepts := func(key string) bool { _, ok := fields.find(key); return ok }
	def := func(key string) any {
		f, ok := fields.find(key)
		if !ok {
			return nil
		}
		fv, ok := fieldByIndex(rv.Elem(), f.index)
		if !ok || fv.Kind() != reflect.Slice {
			return nil
		}
		out := make([]any, fv.Len())
		for i := range out {
			out[i] = fv.Index(i).Interface()
		}
		return out
	}
	return accepts, def
}

// agentDeprecations maps the deprecated keys of an [agent] table, noting a warning for each.
func (l *loader) agentDeprecations(f *fileDoc, m map[string]any) {
	for _, key := range sortedKeys(m) {
		d, ok := FindDeprecation("agent", "", key, nil)
		if !ok {
			continue
		}
		d.apply(m, func(string) any { return nil })
		path := joinPath("agent", key)
		l.out.Warnings = append(l.out.Warnings, Warning{File: f.name, Line: f.index.line(path), Key: path, Msg: d.Notice(false)})
	}
}
