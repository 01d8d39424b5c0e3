package syslog

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	gosyslog "github.com/leodido/go-syslog/v4"
	"github.com/leodido/go-syslog/v4/common"
	"github.com/leodido/go-syslog/v4/rfc3164"
	"github.com/leodido/go-syslog/v4/rfc5424"

	"github.com/morse-agent/morse"
)

// yearOf gives RFC 3164 timestamps, which carry no year, the year of the plugin's clock,
// as Telegraf's CurrentYear does with the system clock.
type yearOf func() time.Time

// Apply is the year to give a timestamp.
func (y yearOf) Apply() int { return y().Year() }

// decoder turns messages into metrics for one connection or one datagram reader: a
// go-syslog machine keeps state while it parses, so it is never shared.
type decoder struct {
	s      *Syslog
	m      gosyslog.Machine
	source string // the sender's IP address, the source tag; empty for unix sockets
}

func (s *Syslog) newDecoder(source string) *decoder {
	var m gosyslog.Machine
	if s.SyslogStandard == "RFC3164" {
		opts := []gosyslog.MachineOption{rfc3164.WithYear(yearOf(s.now))}
		if s.BestEffort {
			opts = append(opts, rfc3164.WithBestEffort())
		}
		m = rfc3164.NewMachine(opts...)
	} else {
		var opts []gosyslog.MachineOption
		if s.BestEffort {
			opts = append(opts, rfc5424.WithBestEffort())
		}
		m = rfc5424.NewMachine(opts...)
	}
	return &decoder{s: s, m: m, source: source}
}

// errUnparsable is go-syslog giving neither a message nor an error, as Telegraf reports it.
var errUnparsable = fmt.Errorf("unable to parse message")

// decode parses one message. It returns the metric and true when there is one to keep;
// err, when not nil, says what was wrong with the message, whether it was kept in part
// (best_effort) or refused. The plugin's counters are told which.
func (d *decoder) decode(msg []byte) (morse.Metric, bool, error) {
	d.s.c.messages.Incr()
	parsed, err := d.m.Parse(msg)
	var base *gosyslog.Base
	switch m := parsed.(type) {
	case *rfc5424.SyslogMessage:
		base = &m.Base
	case *rfc3164.SyslogMessage:
		base = &m.Base
	}
	if base == nil || base.Facility == nil || base.Severity == nil {
		d.s.c.malformed.Incr()
		if err == nil {
			err = errUnparsable
		}
		return morse.Metric{}, false, err
	}
	if err != nil {
		d.s.c.partial.Incr()
	}
	return d.metric(parsed, base), true, err
}

// facilityLevel and severityLevel are the facility and severity tags, as go-syslog's
// FacilityLevel and SeverityShortLevel give them, without the string each of those
// allocates.
func facilityLevel(f uint8) string {
	if k, ok := common.FacilityKeywords[f]; ok {
		return k
	}
	return common.Facility[f]
}

func severityLevel(s uint8) string { return common.SeverityLevelsShort[s] }

// metric builds Telegraf's "syslog" metric, its fields in key order as Telegraf's
// serializer writes them. The time is when the message arrived, as in Telegraf; the
// message's own time is the timestamp field.
func (d *decoder) metric(msg gosyslog.Message, base *gosyslog.Base) morse.Metric {
	tags := make([]morse.Tag, 0, 5)
	if base.Appname != nil {
		tags = append(tags, morse.Tag{Key: "appname", Value: *base.Appname})
	}
	tags = append(tags, morse.Tag{Key: "facility", Value: facilityLevel(*base.Facility)})
	if base.Hostname != nil {
		tags = append(tags, morse.Tag{Key: "hostname", Value: *base.Hostname})
	}
	tags = append(tags, morse.Tag{Key: "severity", Value: severityLevel(*base.Severity)})
	if d.source != "" {
		tags = append(tags, morse.Tag{Key: "source", Value: d.source})
	}
	m5424, _ := msg.(*rfc5424.SyslogMessage)
	var sd map[string]map[string]string
	if m5424 != nil && m5424.StructuredData != nil {
		sd = *m5424.StructuredData
	}
	fields := make([]morse.Field, 0, 7+sdCount(sd))
	fields = append(fields, morse.Field{Key: "facility_code", Value: morse.Int(int64(*base.Facility))})
	if base.Message != nil {
		text := strings.TrimRightFunc(*base.Message, unicode.IsSpace)
		fields = append(fields, morse.Field{Key: "message", Value: morse.String(text)})
	}
	if base.MsgID != nil {
		fields = append(fields, morse.Field{Key: "msgid", Value: morse.String(*base.MsgID)})
	}
	if base.ProcID != nil {
		fields = append(fields, morse.Field{Key: "procid", Value: morse.String(*base.ProcID)})
	}
	fields = append(fields, morse.Field{Key: "severity_code", Value: morse.Int(int64(*base.Severity))})
	if base.Timestamp != nil {
		fields = append(fields, morse.Field{Key: "timestamp", Value: morse.Int(base.Timestamp.UnixNano())})
	}
	if m5424 != nil {
		fields = append(fields, morse.Field{Key: "version", Value: morse.Uint(uint64(m5424.Version))})
	}
	if len(sd) > 0 {
		fields = d.structured(fields, sd)
	}
	return morse.NewMetric("syslog", tags, fields, d.s.now())
}

// sdCount is the number of fields the structured data makes.
func sdCount(sd map[string]map[string]string) int {
	n := 0
	for _, params := range sd {
		n += max(1, len(params))
	}
	return n
}

// structured adds the structured data as Telegraf does: an SD-ID without parameters is a
// true boolean field of its name, each parameter a string field named ID, separator, name.
// fixed holds the message's own fields, in key order; the structured fields are sorted
// apart, fewer than the whole, and merged in.
func (d *decoder) structured(fixed []morse.Field, sd map[string]map[string]string) []morse.Field {
	nfixed := len(fixed)
	all := fixed
	for id, params := range sd {
		if len(params) == 0 {
			all = append(all, morse.Field{Key: id, Value: morse.Bool(true)})
			continue
		}
		for k, v := range params {
			all = append(all, morse.Field{Key: id + d.s.Separator + k, Value: morse.String(v)})
		}
	}
	extra := all[nfixed:]
	slices.SortFunc(extra, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	out := make([]morse.Field, 0, len(all))
	i, j := 0, 0
	for i < nfixed || j < len(extra) {
		switch {
		case j == len(extra) || (i < nfixed && fixed[i].Key < extra[j].Key):
			out = append(out, fixed[i])
			i++
		case i < nfixed && fixed[i].Key == extra[j].Key:
			// A parameter may share its name with a fixed field ("timestamp" with an
			// empty separator); Telegraf's map keeps the parameter, written last.
			i++
		default:
			out = append(out, extra[j])
			j++
		}
	}
	return out
}
