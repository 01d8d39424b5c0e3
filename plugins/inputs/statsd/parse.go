package statsd

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// kind is a statsd metric type.
type kind uint8

const (
	kindCounter kind = iota
	kindGauge
	kindSet
	kindTiming
	kindHistogram
	kindDistribution
)

// kinds maps the type of a line to its kind, and names it in the metric_type tag.
var kinds = map[string]kind{"c": kindCounter, "g": kindGauge, "s": kindSet, "ms": kindTiming,
	"h": kindHistogram, "d": kindDistribution}

var kindTags = [...]string{"counter", "gauge", "set", "timing", "histogram", "distribution"}

// sample is one value of one line, ready to aggregate. Its strings may point into the
// packet; the cache clones what it keeps.
type sample struct {
	kind     kind
	name     string
	field    string
	tags     []morse.Tag // sorted by key
	ival     int64       // a counter's increment
	fval     float64     // a gauge's, timing's, histogram's or distribution's value
	sval     string      // a set's member
	additive bool        // a gauge's +/- delta
	rate     float64     // the sample rate, 0 when none was given
}

// lineParser parses the packets of one worker; its scratch space is reused.
type lineParser struct {
	s       *Statsd
	acc     morse.Accumulator
	samples []sample
	key     []byte
}

func (s *Statsd) newLineParser(acc morse.Accumulator) *lineParser {
	return &lineParser{s: s, acc: acc}
}

// parsePacket parses every line of a packet, then aggregates what they hold at once.
func (p *lineParser) parsePacket(data []byte, from string) {
	text := string(data)
	p.samples = p.samples[:0]
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		p.parseLine(strings.TrimSpace(line), from)
	}
	if len(p.samples) > 0 {
		p.emitDistributions()
		p.s.cache.add(p.s, p.samples, &p.key)
	}
}

// emitDistributions reports each distribution value as it came, as a metric of its own
// with the field "value", rather than keeping it until Gather as Telegraf does: a flood of
// distributions then costs the outputs' bounded buffers, not memory of the plugin's own.
// Without datadog_extensions and datadog_distributions they are counted and left out.
func (p *lineParser) emitDistributions() {
	s := p.s
	var now time.Time
	for i := range p.samples {
		smp := &p.samples[i]
		if smp.kind != kindDistribution {
			continue
		}
		if !s.DataDogExtensions || !s.DataDogDistributions {
			s.c.distIgnored.Incr()
			continue
		}
		if now.IsZero() {
			now = s.now()
		}
		fields := []morse.Field{{Key: "value", Value: morse.Float(smp.fval)}}
		if s.EnableAggregationTemporality {
			fields = append(fields, morse.Field{Key: "start_time", Value: morse.String(s.cache.started())})
		}
		p.acc.AddMetric(morse.NewMetric(strings.Clone(smp.name), cloneTags(smp.tags), fields, now))
	}
}

// cloneTags copies tags and their strings, which may point into a packet.
func cloneTags(tags []morse.Tag) []morse.Tag {
	out := make([]morse.Tag, len(tags))
	for i, t := range tags {
		out[i] = morse.Tag{Key: strings.Clone(t.Key), Value: strings.Clone(t.Value)}
	}
	return out
}

// parseLine parses one line: a DogStatsD event or service check, or a metric line.
func (p *lineParser) parseLine(line, from string) {
	s := p.s
	switch {
	case line == "":
	case s.DataDogExtensions && strings.HasPrefix(line, "_e"):
		if err := p.parseEvent(line, from); err != nil {
			s.lineRefused(reasonEvent, line, err)
		}
	case s.DataDogExtensions && strings.HasPrefix(line, "_sc|"):
		if err := p.parseServiceCheck(line, from); err != nil {
			s.lineRefused(reasonServiceCheck, line, err)
		}
	default:
		if reason := p.parseMetricLine(line); reason != "" {
			s.lineRefused(reason, line, nil)
		}
	}
}

// lineRefused counts a refused line by reason and logs it, throttled.
func (s *Statsd) lineRefused(reason, line string, detail any) {
	s.c.parseErrors.Incr()
	s.c.byReason[reason].Incr()
	s.errLog.Log(s.log, slog.LevelWarn, "refused a statsd line", "reason", reason, "line", line, "detail", detail)
}

// parseMetricLine parses "bucket:value|type[|@rate][:value|type...]" and adds a sample
// for each value, as Telegraf does: the values before a malformed one are kept. It
// returns the reason a value was refused, "" when none was.
func (p *lineParser) parseMetricLine(line string) string {
	var ddTags []morse.Tag
	if p.s.DataDogExtensions && strings.IndexByte(line, '|') >= 0 {
		line, ddTags = p.splitDataDog(line)
	}
	bucket, rest, ok := strings.Cut(line, ":")
	if !ok {
		return reasonNoColon
	}
	var name, field string
	var tags []morse.Tag
	named := false
	for {
		bit, tail, more := strings.Cut(rest, ":")
		val, typ, ok := strings.Cut(bit, "|")
		if !ok {
			return reasonNoType
		}
		typ, rateText, _ := strings.Cut(typ, "|")
		k, ok := kinds[typ]
		if !ok {
			return reasonBadType
		}
		smp := sample{kind: k, rate: p.s.sampleRate(rateText, line)}
		if reason := smp.value(val); reason != "" {
			return reason
		}
		if !named {
			name, field, tags = p.s.parseName(bucket)
			named = true
		}
		smp.name, smp.field = name, field
		smp.tags = p.s.finishTags(tags, k, ddTags)
		p.samples = append(p.samples, smp)
		if !more {
			return ""
		}
		rest = tail
	}
}

// sampleRate reads "@0.1", the third part of a value; a rate that does not parse is
// ignored, as in Telegraf, and logged.
func (s *Statsd) sampleRate(text, line string) float64 {
	if text == "" {
		return 0
	}
	text, _, _ = strings.Cut(text, "|")
	if len(text) < 2 || !strings.Contains(text, "@") {
		return 0
	}
	r, err := strconv.ParseFloat(text[1:], 64)
	if err != nil {
		s.errLog.Log(s.log, slog.LevelWarn, "ignored a sample rate that is not a number", "line", line, "error", err)
		return 0
	}
	return r
}

// value reads the value of a sample of kind smp.kind.
func (smp *sample) value(val string) string {
	if strings.HasPrefix(val, "-") || strings.HasPrefix(val, "+") {
		if smp.kind != kindGauge && smp.kind != kindCounter {
			return reasonSign
		}
		smp.additive = true
	}
	switch smp.kind {
	case kindSet:
		smp.sval = val
	case kindCounter:
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(val, 64)
			if ferr != nil {
				return reasonBadValue
			}
			v = int64(f)
		}
		if smp.rate != 0 {
			v = int64(float64(v) / smp.rate)
		}
		smp.ival = v
	default:
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return reasonBadValue
		}
		smp.fval = f
	}
	return ""
}

// splitDataDog takes DogStatsD's tag sections (|#k:v,...) and container id (|c:...) out
// of a line.
func (p *lineParser) splitDataDog(line string) (string, []morse.Tag) {
	if !strings.Contains(line, "|#") && !strings.Contains(line, "|c:") {
		return line, nil
	}
	segs := strings.Split(line, "|")
	kept := segs[:1]
	var tags []morse.Tag
	for _, seg := range segs[1:] {
		switch {
		case strings.HasPrefix(seg, "#"):
			tags = parseDataDogTags(tags, seg[1:])
		case strings.HasPrefix(seg, "c:"):
			if p.s.DataDogKeepContainerTag {
				tags = setTag(tags, "container", seg[2:])
			}
		default:
			kept = append(kept, seg)
		}
	}
	return strings.Join(kept, "|"), tags
}

// parseName turns a bucket into a measurement, a field and tags: InfluxDB-style tags after
// commas, sanitize_name_method, the templates (the bucket's tags fill in keys the template
// did not set), convert_names, and "value" for no field.
func (s *Statsd) parseName(bucket string) (name, field string, tags []morse.Tag) {
	name, rest, _ := strings.Cut(bucket, ",")
	var btags []morse.Tag
	for rest != "" {
		var kv string
		kv, rest, _ = strings.Cut(rest, ",")
		if k, v := parseKeyValue(kv); k != "" {
			btags = setTag(btags, k, v)
		}
	}
	if s.SanitizeNamesMethod == "upstream" {
		name = sanitizeUpstream(name)
	}
	// Telegraf's graphite parser reads only what comes before the first whitespace, and a
	// bucket with none keeps no tag.
	if parts := strings.Fields(name); len(parts) == 0 {
		name, btags = "", nil
	} else {
		name = parts[0]
	}
	if s.engine == nil {
		name = strings.ReplaceAll(name, ".", s.separator())
		tags = btags
	} else if name != "" {
		name, tags, field = s.engine.Apply(name)
		for _, t := range btags {
			if !slices.ContainsFunc(tags, func(x morse.Tag) bool { return x.Key == t.Key }) {
				tags = append(tags, t)
			}
		}
	}
	if s.ConvertNames {
		name = strings.ReplaceAll(strings.ReplaceAll(name, ".", "_"), "-", "__")
	}
	if field == "" {
		field = "value"
	}
	return name, field, tags
}

// parseKeyValue reads "key=value"; a part without '=' is a value without a key, and a value
// may hold '='.
func parseKeyValue(kv string) (key, value string) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return "", kv
	}
	return k, v
}

// finishTags adds metric_type (and temporality) and the DogStatsD tags, which win, to the
// bucket's tags, sorted, in a new slice.
func (s *Statsd) finishTags(tags []morse.Tag, k kind, dd []morse.Tag) []morse.Tag {
	out := make([]morse.Tag, 0, len(tags)+len(dd)+2)
	out = append(out, tags...)
	out = setTag(out, "metric_type", kindTags[k])
	if k == kindCounter && s.EnableAggregationTemporality {
		t := "cumulative"
		if s.DeleteCounters {
			t = "delta"
		}
		out = setTag(out, "temporality", t)
	}
	for _, t := range dd {
		out = setTag(out, t.Key, t.Value)
	}
	slices.SortFunc(out, func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// setTag sets key to value, replacing an earlier value.
func setTag(tags []morse.Tag, key, value string) []morse.Tag {
	for i := range tags {
		if tags[i].Key == key {
			tags[i].Value = value
			return tags
		}
	}
	return append(tags, morse.Tag{Key: key, Value: value})
}

// appendKey appends the cache key of a sample: its name and sorted tags, as Telegraf's
// hash holds them, so that one measurement gathers every field of one series.
func appendKey(b []byte, smp *sample) []byte {
	b = append(b, smp.name...)
	for _, t := range smp.tags {
		b = append(b, 0)
		b = append(b, t.Key...)
		b = append(b, '=')
		b = append(b, t.Value...)
	}
	return b
}
