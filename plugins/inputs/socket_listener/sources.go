package socketlistener

import (
	"errors"
	"log/slog"
	"net"

	"github.com/morse-agent/morse"
)

// TelegrafOptions are the options of Telegraf's socket listener that morse takes with their
// Telegraf meaning (allowed_sources) or accepts for Telegraf's configs (the rest, see
// validateTelegraf and warnTelegraf).
type TelegrafOptions struct {
	// AllowedSources, when not empty, lists the only sender IP addresses whose connections
	// and datagrams are read; others are refused, counted and logged.
	AllowedSources []string `toml:"allowed_sources"`
	// MulticastSource is the source of a source-specific multicast group; accepted with a
	// warning, as morse does not join multicast groups.
	MulticastSource string `toml:"multicast_source"`
	// MaxParallelParsers is Telegraf's parser count for datagrams; morse has udp_receivers.
	MaxParallelParsers int `toml:"max_parallel_parsers"`
	// SplittingStrategy splits a stream into messages; line protocol is split at newlines,
	// Telegraf's default, so "newline" (or empty) is the one accepted. The other splitting
	// options only apply to other strategies, and are ignored with newline, as in Telegraf.
	SplittingStrategy    string         `toml:"splitting_strategy"`
	SplittingDelimiter   string         `toml:"splitting_delimiter"`
	SplittingLength      int            `toml:"splitting_length"`
	SplittingLengthField map[string]any `toml:"splitting_length_field"`

	allowed []net.IP
}

// validateTelegraf checks the Telegraf options and parses allowed_sources.
func (o *TelegrafOptions) validateTelegraf() []error {
	var errs []error
	o.allowed = o.allowed[:0]
	for _, s := range o.AllowedSources {
		ip := net.ParseIP(s)
		if ip == nil {
			errs = append(errs, morse.Errorf("allowed_sources", "%q is not an IP address", s))
			continue
		}
		o.allowed = append(o.allowed, ip)
	}
	switch o.SplittingStrategy {
	case "", "newline":
	default:
		errs = append(errs, morse.Errorf("splitting_strategy", "%q is not supported: line protocol is split at newlines (\"newline\")", o.SplittingStrategy))
	}
	if o.MaxParallelParsers < 0 {
		errs = append(errs, morse.Errorf("max_parallel_parsers", "must not be negative, got %d", o.MaxParallelParsers))
	}
	return errs
}

// warnTelegraf warns once, at start, about accepted options that do nothing in morse.
func (o *TelegrafOptions) warnTelegraf(l *slog.Logger) {
	if o.MulticastSource != "" {
		l.Warn("multicast_source has no effect in morse: the listener does not join multicast groups")
	}
	if o.MaxParallelParsers > 1 {
		l.Warn("max_parallel_parsers has no effect in morse: datagrams are parsed by udp_receivers goroutines")
	}
}

// sourceAllowed says whether a sender may be read, as Telegraf decides it: with an
// allowed_sources list, only a sender with one of its IP addresses.
func (o *TelegrafOptions) sourceAllowed(addr net.Addr) bool {
	if len(o.allowed) == 0 {
		return true
	}
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	case *net.IPAddr:
		ip = a.IP
	default:
		return false
	}
	for _, a := range o.allowed {
		if a.Equal(ip) {
			return true
		}
	}
	return false
}

// errNotAllowed is logged for a sender that allowed_sources leaves out.
var errNotAllowed = errors.New("source not in allowed_sources")
