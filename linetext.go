package morse

import (
	"strings"
	"unicode/utf8"
)

// The agent looks into a line metric's text for the two things it needs on the hot path
// without expanding it: the measurement name, for name filters, and whether a tag key is
// present, to add the global and input tags that a metric lacks. NewLineMetric's contract
// makes scanning simple: a backslash always escapes the byte after it.

// lineHeader returns where the measurement ends and where the field set starts (just after
// the space that ends the tag set).
func lineHeader(text string) (nameEnd, fieldsStart int) {
	// Most heads hold no backslash. Then the first space ends the head and the first comma
	// before it the name, and byte searches, which take many bytes a step, find both.
	if sp := strings.IndexByte(text, ' '); sp >= 0 && strings.IndexByte(text[:sp], '\\') < 0 {
		if nameEnd = strings.IndexByte(text[:sp], ','); nameEnd < 0 {
			nameEnd = sp
		}
		return nameEnd, sp + 1
	}
	nameEnd = -1
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case ',':
			if nameEnd < 0 {
				nameEnd = i
			}
		case ' ':
			if nameEnd < 0 {
				nameEnd = i
			}
			return nameEnd, i + 1
		}
	}
	if nameEnd < 0 {
		nameEnd = len(text)
	}
	return nameEnd, len(text)
}

// Split returns the text's measurement and tag set, and its field set, without the space
// between them.
func (lt LineText) Split() (head, fields string) {
	_, fieldsStart := lineHeader(lt.Text)
	return lt.Text[:max(0, fieldsStart-1)], lt.Text[fieldsStart:]
}

// Name returns the measurement name of the text, unescaped, without expanding the rest.
func (lt LineText) Name() string {
	end, _ := lineHeader(lt.Text)
	name := lt.Text[:end]
	if strings.IndexByte(name, '\\') < 0 {
		return name
	}
	return unescapeLine(name)
}

// unescapeLine drops the backslash of every escape.
func unescapeLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// lineHasTag reports whether the text's tag set has the key, given as written (escaped).
func lineHasTag(text, key string) bool {
	nameEnd, fieldsStart := lineHeader(text)
	tags := text[nameEnd:max(nameEnd, fieldsStart-1)] // ",k=v,k=v"
	for i := 0; i < len(tags); {
		ke := scanTo(tags, i+1, '=') // tags[i] is the comma before a key
		if tags[i+1:ke] == key {
			return true
		}
		i = scanTo(tags, ke, ',')
	}
	return false
}

// lineTag returns the value of tag key, unescaped, and whether the text's tag set has it,
// without expanding the rest: an output that routes by a tag reads it so.
func lineTag(text, key string) (string, bool) {
	nameEnd, fieldsStart := lineHeader(text)
	tags := text[nameEnd:max(nameEnd, fieldsStart-1)] // ",k=v,k=v"
	for i := 0; i < len(tags); {
		ks := i + 1 // tags[i] is the comma before a key
		ke := scanTo(tags, ks, '=')
		ve := scanTo(tags, ke+1, ',')
		if k := tags[ks:ke]; k == key || strings.IndexByte(k, '\\') >= 0 && unescapeLine(k) == key {
			v := tags[min(ke+1, ve):ve]
			if strings.IndexByte(v, '\\') >= 0 {
				v = unescapeLine(v)
			}
			return v, true
		}
		i = ve
	}
	return "", false
}

// scanTo returns the index of the first unescaped c in s from i on, or len(s).
func scanTo(s string, i int, c byte) int {
	for i < len(s) && s[i] != c {
		if s[i] == '\\' {
			i++
		}
		i++
	}
	return min(i, len(s))
}

// escapeTagText escapes a tag key or value for line protocol. It reports false for text that
// the serializer would change on its way out (it would drop an empty value and trailing
// backslashes, and replace control bytes), so that such a tag is added to an expanded metric
// instead and written the serializer's way.
func escapeTagText(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	special := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f || c == '\\':
			return "", false
		case c >= 0x80 && !utf8.ValidString(s):
			return "", false
		case c == ',' || c == '=' || c == ' ':
			special = true
		}
	}
	if !special {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '=' || c == ' ' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// WithMissingTags returns m with the tags of extra, sorted by key, whose keys m lacks. A tag
// that m has already is never replaced, which is how Telegraf adds an input's tags and the
// global tags. A line metric gets them in its text where they can be written as they are,
// and is expanded otherwise; a metric that lacks nothing comes back as it was, without
// allocating.
func (m Metric) WithMissingTags(extra []Tag) Metric {
	if len(extra) == 0 {
		return m
	}
	if m.line != "" {
		if lm, ok := mergeMissingLineTags(m, extra); ok {
			return lm
		}
		m = m.expand()
	}
	m.tags = mergeMissingTags(m.tags, extra)
	return m
}

// mergeMissingLineTags is mergeMissingTags for a line metric: it adds to the text the tags of
// extra whose keys it lacks, right after the measurement (line protocol does not require
// sorted tags). It reports false when a tag cannot be written as plain text, and the caller
// then expands the metric.
func mergeMissingLineTags(m Metric, extra []Tag) (Metric, bool) {
	var add []string
	for _, t := range extra {
		k, ok := escapeTagText(t.Key)
		if !ok {
			return m, false
		}
		if lineHasTag(m.line, k) {
			continue
		}
		v, ok := escapeTagText(t.Value)
		if !ok {
			return m, false
		}
		add = append(add, ","+k+"="+v)
	}
	if len(add) == 0 {
		return m, true
	}
	nameEnd, _ := lineHeader(m.line)
	m.line = m.line[:nameEnd] + strings.Join(add, "") + m.line[nameEnd:]
	return m, true
}
