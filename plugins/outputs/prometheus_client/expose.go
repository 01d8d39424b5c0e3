package prometheusclient

import (
	"math"
	"strconv"

	promser "github.com/morse-agent/morse/plugins/serializers/prometheus"
)

// help is the HELP text of every family, Telegraf's.
const help = "Telegraf collected metric"

// appendText appends every family of st in the text exposition format (0.0.4), families by
// name, series in the order first written, and removes the series written before deadline
// (UnixNano; 0 keeps all) first. skip, when not nil, names families to leave out.
func (st *store) appendText(dst []byte, deadline int64, stamps bool, skip func(string) bool) []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	if deadline > 0 {
		st.expire(deadline)
	}
	for _, f := range st.families() {
		if len(f.series) == 0 || skip != nil && skip(f.name) {
			continue
		}
		dst = append(dst, "# HELP "...)
		dst = append(dst, f.name...)
		dst = append(dst, ' ')
		dst = append(dst, help...)
		dst = append(dst, "\n# TYPE "...)
		dst = append(dst, f.name...)
		dst = append(dst, ' ')
		dst = append(dst, kindNames[f.typ]...)
		dst = append(dst, '\n')
		for i := range f.series {
			dst = appendSeries(dst, f, &f.series[i], stamps)
		}
	}
	return dst
}

// has reports whether st holds a family of that name.
func (st *store) has(name string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.fams[name] != nil
}

func appendSeries(dst []byte, f *family, s *series, stamps bool) []byte {
	switch f.typ {
	case histogramKind:
		inf := false
		for _, b := range s.bounds {
			dst = appendLine(dst, f.name, "_bucket", s, "le", b.at, b.value, stamps)
			inf = inf || math.IsInf(b.at, 1)
		}
		if !inf {
			dst = appendLine(dst, f.name, "_bucket", s, "le", math.Inf(1), float64(s.count), stamps)
		}
		dst = appendLine(dst, f.name, "_sum", s, "", 0, s.sum, stamps)
		return appendLine(dst, f.name, "_count", s, "", 0, float64(s.count), stamps)
	case summaryKind:
		for _, q := range s.bounds {
			dst = appendLine(dst, f.name, "", s, "quantile", q.at, q.value, stamps)
		}
		dst = appendLine(dst, f.name, "_sum", s, "", 0, s.sum, stamps)
		return appendLine(dst, f.name, "_count", s, "", 0, float64(s.count), stamps)
	}
	return appendLine(dst, f.name, "", s, "", 0, s.value, stamps)
}

// appendLine writes one sample line: name+suffix, the labels with extra="at" last when
// extra is set, the value and, with stamps, the time in milliseconds.
func appendLine(dst []byte, name, suffix string, s *series, extra string, at, v float64, stamps bool) []byte {
	dst = append(dst, name...)
	dst = append(dst, suffix...)
	if s.labels != "" || extra != "" {
		dst = append(dst, '{')
		dst = append(dst, s.labels...)
		if extra != "" {
			if s.labels != "" {
				dst = append(dst, ',')
			}
			dst = append(dst, extra...)
			dst = append(dst, '=', '"')
			dst = appendFloat(dst, at)
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ' ')
	dst = appendFloat(dst, v)
	if stamps {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, s.timeNs/1e6, 10)
	}
	return append(dst, '\n')
}

// appendEscaped and appendFloat write label values and sample values as the prometheus
// serializer does.
var (
	appendEscaped = promser.AppendLabelValue
	appendFloat   = promser.AppendFloat
)
