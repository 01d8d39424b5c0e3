package regex

import (
	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

// applyTags rewrites the values of the tags that the rule's key selects, looking at the tags
// the metric had when the rule started, with their current values.
func (c *Rule) applyTags(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range e.AppendTagKeys(buf[:0]) {
		value, ok := e.Tag(key)
		if !ok || !c.match.Match(key) || !c.re.MatchString(value) {
			continue
		}
		if c.groups != nil {
			for i, group := range c.re.FindStringSubmatch(value)[1:] {
				if group != "" {
					c.setTag(e, c.groups[i], group)
				}
			}
			continue
		}
		target := key
		if c.ResultKey != "" {
			target = c.ResultKey
		}
		c.setTag(e, target, c.re.ReplaceAllString(value, c.Replacement))
	}
}

func (c *Rule) setTag(e *edit.Editor, key, value string) {
	if c.Append {
		if old, ok := e.Tag(key); ok {
			value = old + value
		}
	}
	e.SetTag(key, value)
}

// applyFields rewrites the string fields that the rule's key selects.
func (c *Rule) applyFields(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range e.AppendFieldKeys(buf[:0]) {
		v, ok := e.Field(key)
		if !ok || v.Type() != morse.TypeString || !c.match.Match(key) || !c.re.MatchString(v.Str()) {
			continue
		}
		if c.groups != nil {
			for i, group := range c.re.FindStringSubmatch(v.Str())[1:] {
				if group != "" {
					e.SetField(c.groups[i], morse.String(group))
				}
			}
			continue
		}
		target := key
		if c.ResultKey != "" {
			target = c.ResultKey
		}
		e.SetField(target, morse.String(c.re.ReplaceAllString(v.Str(), c.Replacement)))
	}
}

// applyTagRename renames the tags whose key matches (see rename).
func (c *Rule) applyTagRename(e *edit.Editor) {
	var buf edit.KeyBuf
	c.rename(e.AppendTagKeys(buf[:0]), func(k string) bool { _, ok := e.Tag(k); return ok },
		func(from, to string) { e.RenameTag(from, to) },
		func(from, to string) { e.RenameTag(from, to) })
}

// applyFieldRename renames the fields whose key matches (see rename). A field renamed to a
// free key keeps its place; one that overwrites another takes that one's place.
func (c *Rule) applyFieldRename(e *edit.Editor) {
	var buf edit.KeyBuf
	c.rename(e.AppendFieldKeys(buf[:0]), e.HasField,
		func(from, to string) { e.RenameFieldInPlace(from, to) },
		func(from, to string) {
			if v, ok := e.Field(from); ok {
				e.SetField(to, v)
				e.RemoveField(from)
			}
		})
}

// rename renames the keys that match. A rename to a free key happens at once (move), so
// that later keys see it taken; renames that collide with an existing key wait until every
// key was looked at, and happen (replace) only with result_key "overwrite". Telegraf
// removes a key whose new name is its old one under "overwrite"; here that renames nothing.
func (c *Rule) rename(keys []string, taken func(string) bool, move, replace func(from, to string)) {
	var pending [][2]string
	for _, key := range keys {
		if !c.re.MatchString(key) {
			continue
		}
		to := c.re.ReplaceAllString(key, c.Replacement)
		switch {
		case to == key:
		case !taken(to):
			move(key, to)
		case c.ResultKey == overwrite:
			pending = append(pending, [2]string{key, to})
		}
	}
	for _, p := range pending {
		replace(p[0], p[1])
	}
}
