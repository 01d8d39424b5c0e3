package influx

import (
	"slices"
	"strings"

	"github.com/morse-agent/morse"
)

// SortFields returns m with its fields in ascending order of their keys, as Telegraf's
// influx_sort_fields writes them. m's own field slice may be shared with other outputs, so
// it is never sorted in place: the sorted copy goes into *scratch, which a caller that
// writes one metric at a time reuses, so that sorting allocates nothing. A nil scratch
// allocates a copy.
func SortFields(m morse.Metric, scratch *[]morse.Field) morse.Metric {
	fields := m.Fields()
	if slices.IsSortedFunc(fields, compareKeys) {
		return m
	}
	var sorted []morse.Field
	if scratch != nil {
		sorted = append((*scratch)[:0], fields...)
		*scratch = sorted
	} else {
		sorted = slices.Clone(fields)
	}
	slices.SortStableFunc(sorted, compareKeys)
	return m.WithFields(sorted)
}

func compareKeys(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) }
