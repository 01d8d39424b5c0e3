package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one configuration problem, placed as precisely as the loader can.
type Error struct {
	File string // the file or source name; "" for problems found outside any file
	Line int    // 1-based; 0 when the problem concerns the whole file
	Key  string // the dotted key at fault, such as "outputs.influxdb.timeout"; may be ""
	Msg  string // what is wrong, and where it helps, how to write it instead
}

// Error formats the problem as file:line: key: problem, leaving out the parts that are
// unknown, so that editors and terminals can jump to the place.
func (e Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one load. Operators fix a config in one round instead of
// one error per restart, so the loader never stops at the first problem.
type Errors []Error

// Error lists the problems one per line, sorted.
func (es Errors) Error() string {
	sorted := slices.Clone(es)
	sorted.Sort()
	lines := make([]string, len(sorted))
	for i, e := range sorted {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders the problems by file, then line, then key, so that the report reads top to
// bottom like the files do and is the same on every run.
func (es Errors) Sort() {
	slices.SortStableFunc(es, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Key, b.Key),
		)
	})
}

// Err returns es as an error, or nil when there is no problem. It exists because a nil Errors
// stored in an error interface is not a nil error.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	es.Sort()
	return es
}

// Warning is something in a config that loads, but that the operator should hear about
// once: an unset environment variable kept as written, or an option that Telegraf removed
// and morse maps to its replacement. It is placed like an Error.
type Warning struct {
	File string // the file or source name
	Line int    // 1-based; 0 when unknown
	Key  string // the variable's name or the dotted key, such as "outputs.influxdb.url"
	Msg  string // what morse did, and what to write instead
}

// String formats the warning as file:line: key: message, as Error does.
func (w Warning) String() string { return Error(w).Error() }
