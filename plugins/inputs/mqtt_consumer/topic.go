package mqtt_consumer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
)

// TopicParsing is one [[inputs.mqtt_consumer.topic_parsing]] table: which elements of a
// topic matching Topic become the measurement, tags and fields. Elements are separated by
// "/"; "_" (or nothing) skips one, "#" stands for any number of them (once per setting),
// and "+" in Topic matches any one.
type TopicParsing struct {
	Topic       string `toml:"topic"`
	Measurement string `toml:"measurement"`
	Tags        string `toml:"tags"`
	Fields      string `toml:"fields"`
	// Types converts fields taken from the topic: "int", "uint" or "float"; a field not
	// named stays a string.
	Types map[string]string `toml:"types"`
}

// topicParser is a TopicParsing compiled. An index below zero counts from the topic's end
// (after a "#").
type topicParser struct {
	literal      map[string]int // elements of topic that must match exactly
	varLength    bool
	minLength    int
	hasName      bool
	nameIndex    int
	tags, fields []indexed
	types        map[string]string
}

type indexed struct {
	key string
	i   int
}

// indices reads a setting: the keys at their positions, how many elements it spans, and
// whether it names an element at all.
func indices(setting string) (keys []indexed, length int, err error) {
	invert := false
	parts := strings.Split(setting, "/")
	for i, k := range parts {
		switch k {
		case "_", "":
			length++
			continue
		case "#":
			if invert {
				return nil, 0, errors.New("\"#\" may appear only once")
			}
			invert = true
			continue
		}
		at := i
		if invert {
			at = i - len(parts)
		}
		keys = append(keys, indexed{key: k, i: at})
		length++
	}
	return keys, length, nil
}

func (c *TopicParsing) compile() (*topicParser, error) {
	p := &topicParser{literal: map[string]int{}, types: c.Types}
	var topicLen int
	invert := false
	parts := strings.Split(c.Topic, "/")
	for i, k := range parts {
		switch k {
		case "+":
			topicLen++
		case "#":
			if p.varLength {
				return nil, errors.New("topic: \"#\" may appear only once")
			}
			p.varLength, invert = true, true
		default:
			if invert {
				p.literal[k] = i - len(parts)
			} else {
				p.literal[k] = i
			}
			topicLen++
		}
	}
	name, nameLen, err := indices(c.Measurement)
	if err != nil {
		return nil, fmt.Errorf("measurement: %w", err)
	}
	if len(name) > 1 {
		return nil, errors.New("measurement: only one element may be named")
	}
	if len(name) == 1 {
		p.hasName, p.nameIndex = true, name[0].i
	}
	var tagLen, fieldLen int
	if p.tags, tagLen, err = indices(c.Tags); err != nil {
		return nil, fmt.Errorf("tags: %w", err)
	}
	if p.fields, fieldLen, err = indices(c.Fields); err != nil {
		return nil, fmt.Errorf("fields: %w", err)
	}
	if !p.varLength {
		switch {
		case p.hasName && nameLen != topicLen:
			return nil, errors.New("measurement has not as many elements as topic")
		case c.Tags != "" && tagLen != topicLen:
			return nil, errors.New("tags has not as many elements as topic")
		case c.Fields != "" && fieldLen != topicLen:
			return nil, errors.New("fields has not as many elements as topic")
		}
	}
	for k, t := range c.Types {
		switch t {
		case "int", "uint", "float":
		default:
			return nil, fmt.Errorf("types: %q: converting to %q is not supported: use int, uint or float", k, t)
		}
	}
	p.minLength = max(topicLen, nameLen, tagLen, fieldLen)
	return p, nil
}

// apply sets what topic yields on m; a topic that does not match leaves m as it is. A field
// that does not convert to its type is an error, as in Telegraf.
func (p *topicParser) apply(m morse.Metric, topic string) (morse.Metric, error) {
	parts := strings.Split(topic, "/")
	if p.varLength && len(parts) < p.minLength || !p.varLength && len(parts) != p.minLength {
		return m, nil
	}
	at := func(i int) string {
		if i < 0 {
			return parts[len(parts)+i]
		}
		return parts[i]
	}
	for lit, i := range p.literal {
		if at(i) != lit {
			return m, nil
		}
	}
	if p.hasName {
		m = m.WithName(at(p.nameIndex))
	}
	for _, t := range p.tags {
		m = m.WithTag(t.key, at(t.i))
	}
	for _, f := range p.fields {
		v, err := p.convert(f.key, at(f.i))
		if err != nil {
			return m, err
		}
		m = m.WithField(f.key, v)
	}
	return m, nil
}

func (p *topicParser) convert(key, raw string) (morse.Value, error) {
	switch p.types[key] {
	case "int":
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return morse.Value{}, fmt.Errorf("field %q: %q is no int: %w", key, raw, err)
		}
		return morse.Int(v), nil
	case "uint":
		v, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			return morse.Value{}, fmt.Errorf("field %q: %q is no uint: %w", key, raw, err)
		}
		return morse.Uint(v), nil
	case "float":
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return morse.Value{}, fmt.Errorf("field %q: %q is no float: %w", key, raw, err)
		}
		return morse.Float(v), nil
	}
	return morse.String(raw), nil
}
