// Package dnsquery is the inputs.dns_query plugin: every interval it asks each server for
// each domain's records and reports, as Telegraf 1.39.3 does, a "dns_query" metric per
// pair with the answer's code and the round trip, or the result "timeout" or "error" when
// there was no answer. It uses github.com/miekg/dns, as Telegraf does.
package dnsquery

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Query DNS servers and report the answer's code and the time it took"

//go:embed sample.conf
var sampleConfig string

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "dns_query",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// The result_code field and result tag of a query, as Telegraf numbers and names them.
const (
	resultSuccess uint64 = 0
	resultTimeout uint64 = 1
	resultError   uint64 = 2
)

// recordTypes are the record_type values Telegraf takes.
var recordTypes = map[string]uint16{
	"A": dns.TypeA, "AAAA": dns.TypeAAAA, "ANY": dns.TypeANY, "CNAME": dns.TypeCNAME,
	"MX": dns.TypeMX, "NS": dns.TypeNS, "PTR": dns.TypePTR, "SOA": dns.TypeSOA,
	"SPF": dns.TypeSPF, "SRV": dns.TypeSRV, "TXT": dns.TypeTXT,
}

// DNSQuery is the inputs.dns_query plugin and its configuration. Build it with New.
type DNSQuery struct {
	// Servers are the DNS servers to ask, by address without the port.
	Servers []string `toml:"servers"`
	// Network is "udp" (the default), "tcp" or "tcp-tls", optionally with 4 or 6.
	Network string `toml:"network"`
	// Domains are the names to ask for; none means the root, ".", asked for NS.
	Domains []string `toml:"domains"`
	// RecordType is the record type asked for; empty means NS.
	RecordType string `toml:"record_type"`
	// Port is the servers' port; below 1 means 53.
	Port int `toml:"port"`
	// Timeout bounds the wait for each answer.
	Timeout morse.Duration `toml:"timeout"`
	// IncludeFields adds "first_ip" (field ip) or "all_ips" (fields ip_0, ip_1, ...).
	IncludeFields []string `toml:"include_fields"`

	qtype    uint16
	firstIP  bool
	allIPs   bool
	log      *slog.Logger
	stats    *selfstat.PluginStats
	counters map[uint64]*selfstat.Counter // by result code; nil until the first gather
}

// The engine finds these optional interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Validator    = (*DNSQuery)(nil)
	_ morse.Initializer  = (*DNSQuery)(nil)
	_ morse.LoggerSetter = (*DNSQuery)(nil)
	_ morse.StatsSetter  = (*DNSQuery)(nil)
)

// New returns the plugin with Telegraf's defaults: UDP, port 53, a 2s timeout.
func New() *DNSQuery {
	return &DNSQuery{Network: "udp", Port: 53, Timeout: morse.Duration(2 * time.Second)}
}

// SetLogger gives the plugin the engine's logger.
func (d *DNSQuery) SetLogger(l *slog.Logger) { d.log = l }

// SetStats gives the plugin its self-metric counters.
func (d *DNSQuery) SetStats(s *selfstat.PluginStats) { d.stats = s }

// Validate checks the options, reporting every problem at once. Telegraf finds an unknown
// record_type only when it queries, and reports it on every gather; morse refuses it here.
func (d *DNSQuery) Validate() error {
	var errs []error
	switch d.Network {
	case "", "udp", "udp4", "udp6", "tcp", "tcp4", "tcp6", "tcp-tls", "tcp4-tls", "tcp6-tls":
	default:
		errs = append(errs, morse.Errorf("network", "%q is not supported: use \"udp\", \"tcp\" or \"tcp-tls\"", d.Network))
	}
	if _, ok := recordTypes[d.RecordType]; !ok && d.RecordType != "" {
		errs = append(errs, morse.Errorf("record_type", "record type %s not recognized: use A, AAAA, ANY, CNAME, MX, NS, PTR, SOA, SPF, SRV or TXT", d.RecordType))
	}
	if d.Port > 65535 {
		errs = append(errs, morse.Errorf("port", "%d is not a port", d.Port))
	}
	if d.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	for _, f := range d.IncludeFields {
		if f != "first_ip" && f != "all_ips" {
			errs = append(errs, morse.Errorf("include_fields", "invalid field %q included: use \"first_ip\" or \"all_ips\"", f))
		}
	}
	for _, s := range d.Servers {
		if s == "" {
			errs = append(errs, morse.Errorf("servers", "an empty server name"))
		}
	}
	return errors.Join(errs...)
}

// Init validates and sets Telegraf's defaults for empty options.
func (d *DNSQuery) Init() error {
	if err := d.Validate(); err != nil {
		return err
	}
	if d.Network == "" {
		d.Network = "udp"
	}
	if d.RecordType == "" {
		d.RecordType = "NS"
	}
	if len(d.Domains) == 0 {
		d.Domains = []string{"."}
		d.RecordType = "NS"
	}
	if d.Port < 1 {
		d.Port = 53
	}
	d.qtype = recordTypes[d.RecordType]
	for _, f := range d.IncludeFields {
		d.firstIP = d.firstIP || f == "first_ip"
		d.allIPs = d.allIPs || f == "all_ips"
	}
	return nil
}

// setup makes the counters on the first gather: internal_dns_query's queries_success,
// queries_timeout and queries_error. A plugin built in code without the agent is
// initialised here. The agent never runs two gathers of one input at once.
func (d *DNSQuery) setup() error {
	if d.counters != nil {
		return nil
	}
	if d.qtype == 0 {
		if err := d.Init(); err != nil {
			return err
		}
	}
	if d.stats == nil {
		d.stats = selfstat.NewPluginStats(nil, "internal_dns_query", nil)
	}
	d.counters = map[uint64]*selfstat.Counter{
		resultSuccess: d.stats.Counter("queries_success"),
		resultTimeout: d.stats.Counter("queries_timeout"),
		resultError:   d.stats.Counter("queries_error"),
	}
	return nil
}

// Gather asks every server for every domain at once and adds one metric per pair. A
// timeout and an NXDOMAIN are results, not errors, as in Telegraf; any other failure is
// also reported as an error.
func (d *DNSQuery) Gather(ctx context.Context, acc morse.Accumulator) error {
	if err := d.setup(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, domain := range d.Domains {
		for _, server := range d.Servers {
			wg.Go(func() {
				m, code, err := d.query(ctx, domain, server)
				d.counters[code].Incr()
				if err != nil {
					acc.AddError(err)
				}
				acc.AddMetric(m)
			})
		}
	}
	wg.Wait()
	return nil
}

// query asks one server for one domain. It returns the metric, its result code, and an
// error to report, nil for a timeout or an NXDOMAIN.
func (d *DNSQuery) query(ctx context.Context, domain, server string) (morse.Metric, uint64, error) {
	q := queryResult{tags: []morse.Tag{
		{Key: "domain", Value: domain}, {Key: "record_type", Value: d.RecordType},
		{Key: "result", Value: "error"}, {Key: "server", Value: server},
	}}
	var msg dns.Msg
	msg.SetQuestion(dns.Fqdn(domain), d.qtype)
	msg.RecursionDesired = true
	c := dns.Client{Net: d.Network, ReadTimeout: time.Duration(d.Timeout)}
	r, rtt, err := c.ExchangeContext(ctx, &msg, net.JoinHostPort(server, strconv.Itoa(d.Port)))
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			q.tags[2].Value = "timeout"
			return q.metric(0, resultTimeout), resultTimeout, nil
		}
		return q.metric(0, resultError), resultError, fmt.Errorf("dns_query: %s query for %s to %s: %w", d.RecordType, domain, server, err)
	}
	rcode := dns.RcodeToString[r.Rcode]
	q.tags = append(q.tags, morse.Tag{Key: "rcode", Value: rcode})
	q.add("rcode_value", morse.Int(int64(r.Rcode)))
	ms := float64(rtt.Nanoseconds()) / 1e6
	if r.Rcode != dns.RcodeSuccess {
		if r.Rcode == dns.RcodeNameError {
			err = nil // NXDOMAIN is an answer, as Telegraf has it
		} else {
			err = fmt.Errorf("dns_query: invalid answer (%s) from %s after %s query for %s", rcode, server, d.RecordType, domain)
		}
		return q.metric(ms, resultError), resultError, err
	}
	q.tags[2].Value = "success"
	q.answers(r.Answer)
	d.ips(&q, r.Answer)
	return q.metric(ms, resultSuccess), resultSuccess, nil
}

// queryResult gathers a metric's tags and its fields beyond the two every metric has.
type queryResult struct {
	tags   []morse.Tag
	fields []morse.Field
}

// add sets a field; a later value of a key replaces an earlier one, as in Telegraf's map.
func (q *queryResult) add(key string, v morse.Value) {
	for i := range q.fields {
		if q.fields[i].Key == key {
			q.fields[i].Value = v
			return
		}
	}
	q.fields = append(q.fields, morse.Field{Key: key, Value: v})
}

// metric builds the "dns_query" metric with query_time_ms and result_code first.
func (q *queryResult) metric(ms float64, code uint64) morse.Metric {
	fields := append([]morse.Field{
		{Key: "query_time_ms", Value: morse.Float(ms)},
		{Key: "result_code", Value: morse.Uint(code)},
	}, q.fields...)
	return morse.NewMetric("dns_query", q.tags, fields, time.Time{})
}

// answers adds Telegraf's fields of the answer's records; with several records of one
// kind the last one's values stand, as in Telegraf. Unsigned 16- and 32-bit values become
// unsigned integer fields, as Telegraf's metric converts them.
func (q *queryResult) answers(rrs []dns.RR) {
	for _, rr := range rrs {
		switch x := rr.(type) {
		case *dns.A, *dns.AAAA, *dns.CNAME:
			q.add("name", morse.String(rr.Header().Name))
		case *dns.MX:
			q.add("name", morse.String(x.Hdr.Name))
			q.add("preference", morse.Uint(uint64(x.Preference)))
		case *dns.SOA:
			q.add("expire", morse.Uint(uint64(x.Expire)))
			q.add("minttl", morse.Uint(uint64(x.Minttl)))
			q.add("name", morse.String(x.Hdr.Name))
			q.add("refresh", morse.Uint(uint64(x.Refresh)))
			q.add("retry", morse.Uint(uint64(x.Retry)))
			q.add("serial", morse.Uint(uint64(x.Serial)))
		}
	}
}

// ips adds include_fields: ip, the first A or AAAA answer, and ip_N, the Nth answer when
// it is an A or AAAA record (N counts every answer, as in Telegraf).
func (d *DNSQuery) ips(q *queryResult, rrs []dns.RR) {
	first := d.firstIP
	for i, rr := range rrs {
		var ip net.IP
		switch x := rr.(type) {
		case *dns.A:
			ip = x.A
		case *dns.AAAA:
			ip = x.AAAA
		default:
			continue
		}
		if first {
			q.add("ip", morse.String(ip.String()))
			first = false
		}
		if d.allIPs {
			q.add("ip_"+strconv.Itoa(i), morse.String(ip.String()))
		}
	}
}
