package filter

// Config selects and trims the metrics that pass through a plugin, with Telegraf's keys.
// Every entry is a glob: *, ? and [...] classes.
type Config struct {
	// NamePass keeps only metrics whose name matches one of the patterns.
	NamePass []string `toml:"namepass"`
	// NameDrop discards metrics whose name matches one of the patterns.
	NameDrop []string `toml:"namedrop"`
	// FieldInclude keeps only matching fields; Telegraf's older name "fieldpass" is read too.
	FieldInclude []string `toml:"fieldinclude"`
	// FieldExclude removes matching fields; Telegraf's older name "fielddrop" is read too.
	FieldExclude []string `toml:"fieldexclude"`
	// TagInclude keeps only matching tags.
	TagInclude []string `toml:"taginclude"`
	// TagExclude removes matching tags.
	TagExclude []string `toml:"tagexclude"`
	// TagPass keeps only metrics that have one of the listed tags with a matching value.
	TagPass map[string][]string `toml:"tagpass"`
	// TagDrop discards metrics that have one of the listed tags with a matching value.
	TagDrop map[string][]string `toml:"tagdrop"`
}

// IsEmpty reports whether the filter has no condition at all, so that callers can skip it.
func (f Config) IsEmpty() bool {
	return len(f.NamePass) == 0 && len(f.NameDrop) == 0 &&
		len(f.FieldInclude) == 0 && len(f.FieldExclude) == 0 &&
		len(f.TagInclude) == 0 && len(f.TagExclude) == 0 &&
		len(f.TagPass) == 0 && len(f.TagDrop) == 0
}
