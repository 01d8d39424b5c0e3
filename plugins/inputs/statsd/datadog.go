package statsd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// DogStatsD's events and service checks, with datadog_extensions, as Telegraf 1.39.3 reads
// them: an event becomes a metric named by its title, a service check one named
// statsd_service_check; the sender's IP, or h:, is the source tag, since host is reserved.

var unescapeNewlines = strings.NewReplacer(`\n`, "\n")

// parseDataDogTags adds DogStatsD's "k:v,k2:v2,flag" tags to tags; a tag without a value
// is "true", and a value may hold ':'.
func parseDataDogTags(tags []morse.Tag, s string) []morse.Tag {
	for s != "" {
		var kv string
		kv, s, _ = strings.Cut(s, ",")
		k, v, ok := strings.Cut(kv, ":")
		if !ok || v == "" {
			v = "true"
		}
		if k == "" && !ok {
			continue
		}
		tags = setTag(tags, k, v)
	}
	return tags
}

// parseEvent reads "_e{title.length,text.length}:title|text[|d:ts][|p:priority]
// [|h:host][|t:alert_type][|k:aggregation_key][|s:source_type_name][|#tags]".
func (p *lineParser) parseEvent(line, from string) error {
	header, msg, ok := strings.Cut(line, ":")
	if !ok || len(header) < 7 || len(msg) < 3 || !strings.HasPrefix(header, "_e{") || !strings.HasSuffix(header, "}") {
		return errors.New("invalid event format")
	}
	tl, xl, ok := strings.Cut(header[3:len(header)-1], ",")
	if !ok {
		return errors.New("invalid event format")
	}
	titleLen, err1 := strconv.Atoi(tl)
	textLen, err2 := strconv.Atoi(xl)
	if err1 != nil || err2 != nil || titleLen < 0 || textLen < 0 {
		return fmt.Errorf("invalid title or text length in %q", header)
	}
	if titleLen+textLen+1 > len(msg) {
		return errors.New("title.length and text.length exceed the message")
	}
	title, text, meta := msg[:titleLen], msg[titleLen+1:titleLen+1+textLen], msg[titleLen+1+textLen:]
	if title == "" || text == "" {
		return errors.New("empty title or text")
	}
	fields := map[string]any{"alert_type": "info", "text": unescapeNewlines.Replace(text), "priority": "normal"}
	var tags []morse.Tag
	if from != "" {
		tags = setTag(tags, "source", from)
	}
	if len(meta) >= 2 {
		var err error
		if tags, err = eventMeta(meta[1:], fields, tags); err != nil {
			return err
		}
	}
	p.addDataDog(title, fields, tags, p.s.now())
	return nil
}

// eventMeta reads an event's metadata sections into fields and tags.
func eventMeta(meta string, fields map[string]any, tags []morse.Tag) ([]morse.Tag, error) {
	for _, m := range strings.Split(meta, "|") {
		if len(m) < 2 {
			return nil, errors.New("too short metadata field")
		}
		switch v := m[2:]; m[:2] {
		case "d:":
			if ts, err := strconv.ParseInt(v, 10, 64); err == nil {
				fields["ts"] = ts
			}
		case "p:":
			if v == "low" {
				fields["priority"] = "low"
			}
		case "h:":
			tags = setTag(tags, "source", v)
		case "t:":
			switch v {
			case "error", "warning", "success", "info":
				fields["alert_type"] = v
			}
		case "k:":
			tags = setTag(tags, "aggregation_key", v)
		case "s:":
			fields["source_type_name"] = v
		default:
			if m[0] != '#' {
				return nil, fmt.Errorf("unknown metadata type %q", m)
			}
			tags = parseDataDogTags(tags, m[1:])
		}
	}
	return tags, nil
}

var checkStatuses = []string{"ok", "warning", "critical", "unknown"}

// parseServiceCheck reads "_sc|name|status[|d:ts][|h:host][|#tags][|m:message]".
func (p *lineParser) parseServiceCheck(line, from string) error {
	parts := strings.Split(line, "|")
	if len(parts) < 3 {
		return errors.New("expected at least _sc|name|status")
	}
	if parts[1] == "" {
		return errors.New("empty check name")
	}
	st, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return fmt.Errorf("status %q is not a number", parts[2])
	}
	if st < 0 || st >= int64(len(checkStatuses)) {
		return fmt.Errorf("status %d is not from 0 to 3", st)
	}
	tags := []morse.Tag{{Key: "check_name", Value: parts[1]}}
	if from != "" {
		tags = setTag(tags, "source", from)
	}
	fields := map[string]any{"status": st, "status_text": checkStatuses[st]}
	ts := p.s.now()
	for _, part := range parts[3:] {
		if len(part) < 2 {
			continue
		}
		switch {
		case strings.HasPrefix(part, "d:"):
			if sec, err := strconv.ParseInt(part[2:], 10, 64); err == nil {
				ts = time.Unix(sec, 0)
			}
		case strings.HasPrefix(part, "h:"):
			tags = setTag(tags, "source", part[2:])
		case strings.HasPrefix(part, "m:"):
			fields["message"] = unescapeNewlines.Replace(part[2:])
		case strings.HasPrefix(part, "#"):
			tags = parseDataDogTags(tags, part[1:])
		}
	}
	p.addDataDog("statsd_service_check", fields, tags, ts)
	return nil
}

// addDataDog adds an event or service check, with a host tag moved to source, and copies
// of strings that may point into the packet.
func (p *lineParser) addDataDog(name string, fields map[string]any, tags []morse.Tag, ts time.Time) {
	tm := make(map[string]string, len(tags))
	for _, t := range tags {
		tm[strings.Clone(t.Key)] = strings.Clone(t.Value)
	}
	if h, ok := tm["host"]; ok {
		delete(tm, "host")
		tm["source"] = h
	}
	for k, v := range fields {
		if s, ok := v.(string); ok {
			fields[k] = strings.Clone(s)
		}
	}
	p.acc.AddFields(strings.Clone(name), fields, tm, ts)
}
