package prometheus

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// help is the HELP text of every family, Telegraf's.
const help = "Telegraf collected metric"

// appendText writes the families in the text exposition format.
func (c *collection) appendText(dst []byte, o Options) []byte {
	fams := c.families
	if o.SortMetrics {
		slices.SortStableFunc(fams, func(a, b *family) int {
			if a.name != b.name {
				return strings.Compare(a.name, b.name)
			}
			return int(a.typ) - int(b.typ)
		})
	}
	for _, fam := range fams {
		if len(fam.samples) == 0 {
			continue
		}
		if o.SortMetrics {
			slices.SortStableFunc(fam.samples, compareLabels)
		}
		if !o.CompactEncoding {
			dst = append(dst, "# HELP "...)
			dst = append(dst, fam.name...)
			dst = append(dst, ' ')
			dst = append(dst, help...)
			dst = append(dst, '\n')
		}
		dst = append(dst, "# TYPE "...)
		dst = append(dst, fam.name...)
		dst = append(dst, ' ')
		dst = append(dst, kindNames[fam.typ]...)
		dst = append(dst, '\n')
		for _, smp := range fam.samples {
			dst = appendSample(dst, fam, smp, o.ExportTimestamp)
		}
	}
	return dst
}

// compareLabels orders samples as Telegraf's prometheus_sort_metrics does: fewer labels
// first, then by each label's name and value.
func compareLabels(a, b *sample) int {
	if len(a.labels) != len(b.labels) {
		return len(a.labels) - len(b.labels)
	}
	for i := range a.labels {
		l, r := a.labels[i], b.labels[i]
		if c := strings.Compare(l.name, r.name); c != 0 {
			return c
		}
		if c := strings.Compare(l.value, r.value); c != 0 {
			return c
		}
	}
	return 0
}

func appendSample(dst []byte, fam *family, smp *sample, stamp bool) []byte {
	line := func(dst []byte, suffix, extra string, at, v float64) []byte {
		dst = append(dst, fam.name...)
		dst = append(dst, suffix...)
		dst = appendLabels(dst, smp.labels, extra, at)
		dst = append(dst, ' ')
		dst = appendFloat(dst, v)
		if stamp {
			dst = append(dst, ' ')
			dst = strconv.AppendInt(dst, smp.time.UnixNano()/1e6, 10)
		}
		return append(dst, '\n')
	}
	switch fam.typ {
	case histogramKind:
		inf := false
		for _, b := range smp.bounds {
			dst = line(dst, "_bucket", "le", b.at, b.value)
			inf = inf || math.IsInf(b.at, 1)
		}
		if !inf {
			dst = line(dst, "_bucket", "le", math.Inf(1), float64(smp.count))
		}
		dst = line(dst, "_sum", "", 0, smp.sum)
		return line(dst, "_count", "", 0, float64(smp.count))
	case summaryKind:
		for _, q := range smp.bounds {
			dst = line(dst, "", "quantile", q.at, q.value)
		}
		dst = line(dst, "_sum", "", 0, smp.sum)
		return line(dst, "_count", "", 0, float64(smp.count))
	}
	return line(dst, "", "", 0, smp.value)
}

// appendLabels writes {name="value",...}, with extra="at" last when extra is set, or
// nothing when there is no label.
func appendLabels(dst []byte, ls []label, extra string, at float64) []byte {
	if len(ls) == 0 && extra == "" {
		return dst
	}
	dst = append(dst, '{')
	for i, l := range ls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, l.name...)
		dst = append(dst, '=', '"')
		dst = appendEscaped(dst, l.value)
		dst = append(dst, '"')
	}
	if extra != "" {
		if len(ls) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, extra...)
		dst = append(dst, '=', '"')
		dst = appendFloat(dst, at)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// appendEscaped writes a label value with \, " and newline escaped.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '"':
			dst = append(dst, '\\', '"')
		case '\n':
			dst = append(dst, '\\', 'n')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendFloat writes a value as the exposition format's encoder does: the shortest 'g'
// form, with +Inf, -Inf and NaN.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		return append(dst, '0')
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// metricName and labelName sanitize a name as Telegraf does under
// prometheus_name_sanitization, and report false for one left empty.
func (s *Serializer) metricName(name string) (string, bool) { return SanitizeMetricName(name, s.utf8) }

func (s *Serializer) labelName(name string) (string, bool) { return SanitizeLabelName(name, s.utf8) }

// legal reports whether r may stand at position i of a legacy name; colons only in metric
// names.
func legal(r rune, i int, colon bool) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || colon && r == ':' || i > 0 && r >= '0' && r <= '9'
}

func legacyValid(name string, colon bool) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !legal(rune(name[i]), i, colon) {
			return false
		}
	}
	return true
}

// sanitize is Telegraf's legacy sanitization: an illegal first character is dropped, others
// become _, and leading and trailing _ are trimmed.
func sanitize(name string, colon bool) (string, bool) {
	var b strings.Builder
	for i, r := range name {
		switch {
		case legal(r, i, colon):
			b.WriteRune(r)
		case i > 0:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	return out, out != ""
}

// escape is the exposition encoder's underscore escaping of a UTF-8 name: every character
// that a legacy metric name cannot hold becomes _.
func escape(name string) string {
	var b strings.Builder
	for i, r := range name {
		if legal(r, i, true) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
