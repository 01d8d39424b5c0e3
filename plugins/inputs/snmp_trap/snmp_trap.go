// Package snmp_trap is the inputs.snmp_trap plugin: it listens for SNMP traps and informs
// (v1, v2c, or v3 with one USM user) on a UDP address and turns each into one snmp_trap
// metric with Telegraf 1.39.3's tags and fields, naming OIDs by the MIBs gosmi loads.
package snmp_trap

import (
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gosnmp/gosnmp"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/snmp"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Receive SNMP traps"

//go:embed sample.conf
var sampleConfig string

// SnmpTrap is the inputs.snmp_trap plugin and its configuration. Build it with New.
type SnmpTrap struct {
	// ServiceAddress is udp://[host]:port; "udp://:162" by default.
	ServiceAddress string `toml:"service_address"`
	// Timeout is Telegraf's bound on its snmptranslate runs; morse translates in process
	// with gosmi and accepts it for Telegraf's configs.
	Timeout morse.Duration `toml:"timeout"`
	// Version is "1", "2c" (default) or "3".
	Version string `toml:"version"`
	// Path lists the MIB directories gosmi loads.
	Path []string `toml:"path"`
	// SecLevel, SecName, AuthProtocol, AuthPassword, PrivProtocol and PrivPassword are the
	// v3 user traps must come from.
	SecLevel     string       `toml:"sec_level"`
	SecName      morse.Secret `toml:"sec_name"`
	AuthProtocol string       `toml:"auth_protocol"`
	AuthPassword morse.Secret `toml:"auth_password"`
	PrivProtocol string       `toml:"priv_protocol"`
	PrivPassword morse.Secret `toml:"priv_password"`

	log      *slog.Logger
	acc      morse.Accumulator
	listener *gosnmp.TrapListener
	done     chan error
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.ServiceInput = (*SnmpTrap)(nil)
	_ morse.Validator    = (*SnmpTrap)(nil)
	_ morse.Initializer  = (*SnmpTrap)(nil)
	_ morse.LoggerSetter = (*SnmpTrap)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *SnmpTrap {
	return &SnmpTrap{ServiceAddress: "udp://:162", Timeout: morse.Duration(5 * time.Second), Version: "2c",
		Path: []string{"/usr/share/snmp/mibs"}, log: slog.New(slog.DiscardHandler)}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "snmp_trap",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger takes the plugin's logger.
func (s *SnmpTrap) SetLogger(l *slog.Logger) { s.log = l }

// usm is the client options of the v3 user, checked by the shared code.
func (s *SnmpTrap) usm() snmp.ClientConfig {
	return snmp.ClientConfig{Version: 3, SecLevel: s.SecLevel, SecName: string(s.SecName),
		AuthProtocol: s.AuthProtocol, AuthPassword: s.AuthPassword, PrivProtocol: s.PrivProtocol, PrivPassword: s.PrivPassword}
}

// Validate reports every problem of the options.
func (s *SnmpTrap) Validate() error {
	var errs []error
	if s.Version != "1" && s.Version != "2c" && s.Version != "3" && s.Version != "" {
		errs = append(errs, morse.Errorf("version", "%q: use \"1\", \"2c\" or \"3\"", s.Version))
	}
	if u, err := url.Parse(s.ServiceAddress); err != nil || u.Scheme != "udp" {
		errs = append(errs, morse.Errorf("service_address", "%q: use udp://[host]:port", s.ServiceAddress))
	}
	if s.Version == "3" {
		c := s.usm()
		errs = append(errs, c.Validate())
	}
	return errors.Join(errs...)
}

// Init loads the MIBs and sets up the listener's parameters.
func (s *SnmpTrap) Init() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if len(s.Path) == 0 {
		s.Path = []string{"/usr/share/snmp/mibs"}
	}
	if err := snmp.LoadMIBs(s.Path, s.log); err != nil {
		return err
	}
	params := &gosnmp.GoSNMP{Port: gosnmp.Default.Port, Transport: "udp", Community: gosnmp.Default.Community,
		Timeout: gosnmp.Default.Timeout, Retries: gosnmp.Default.Retries, MaxOids: gosnmp.Default.MaxOids, Version: gosnmp.Version2c}
	switch s.Version {
	case "1":
		params.Version = gosnmp.Version1
	case "3":
		c := s.usm()
		gs, err := c.NewClient("127.0.0.1")
		if err != nil {
			return err
		}
		params.Version, params.SecurityModel = gosnmp.Version3, gs.SecurityModel
		params.MsgFlags, params.SecurityParameters = gs.MsgFlags, gs.SecurityParameters
	}
	s.listener = gosnmp.NewTrapListener()
	s.listener.Params = params
	s.listener.OnNewTrap = s.handle
	return nil
}

// Start listens; it returns once the socket is bound, or the error binding it.
func (s *SnmpTrap) Start(_ context.Context, acc morse.Accumulator) error {
	if s.listener == nil {
		if err := s.Init(); err != nil {
			return err
		}
	}
	u, err := url.Parse(s.ServiceAddress)
	if err != nil {
		return fmt.Errorf("invalid service address %q: %w", s.ServiceAddress, err)
	}
	s.acc = acc
	s.done = make(chan error, 1)
	go func() { s.done <- s.listener.Listen(u.Host) }()
	select {
	case <-s.listener.Listening():
		s.log.Info("listening", "address", s.ServiceAddress)
		return nil
	case err := <-s.done:
		return fmt.Errorf("listening on %s: %w", s.ServiceAddress, err)
	}
}

// Gather does nothing: traps arrive on their own.
func (s *SnmpTrap) Gather(context.Context, morse.Accumulator) error { return nil }

// Stop closes the socket and waits for the listener to end.
func (s *SnmpTrap) Stop() {
	if s.listener == nil || s.done == nil {
		return
	}
	s.listener.Close()
	<-s.done
	s.done = nil
}

// handle turns one trap into a metric. A trap whose OIDs cannot be named is reported as
// an error and not emitted, as in Telegraf.
func (s *SnmpTrap) handle(p *gosnmp.SnmpPacket, addr *net.UDPAddr) {
	now := time.Now()
	tags := make([]morse.Tag, 0, 8)
	tags = append(tags, morse.Tag{Key: "version", Value: p.Version.String()}, morse.Tag{Key: "source", Value: addr.IP.String()})
	fields := make([]morse.Field, 0, len(p.Variables)+1)
	setTrap := func(oid string, e snmp.MibEntry) {
		tags = append(tags, morse.Tag{Key: "oid", Value: oid}, morse.Tag{Key: "name", Value: e.OidText}, morse.Tag{Key: "mib", Value: e.MibName})
	}
	if p.Version == gosnmp.Version1 {
		// RFC 2576 3.1: a v1 trap's v2 notification OID.
		trapOid := ""
		switch {
		case p.GenericTrap >= 0 && p.GenericTrap < 6:
			trapOid = ".1.3.6.1.6.3.1.1.5." + strconv.Itoa(p.GenericTrap+1)
		case p.GenericTrap == 6:
			trapOid = p.Enterprise + ".0." + strconv.Itoa(p.SpecificTrap)
		}
		if trapOid != "" {
			e, err := snmp.TrapLookup(trapOid)
			if err != nil {
				s.acc.AddError(fmt.Errorf("resolving v1 trap OID %s from %s: %w", trapOid, addr.IP, err))
				return
			}
			setTrap(trapOid, e)
		}
		if p.AgentAddress != "" {
			tags = append(tags, morse.Tag{Key: "agent_address", Value: p.AgentAddress})
		}
		fields = append(fields, morse.Field{Key: "sysUpTimeInstance", Value: morse.Uint(uint64(p.Timestamp))})
	}
	for i := range p.Variables {
		v := &p.Variables[i]
		var value any = v.Value
		switch v.Type {
		case gosnmp.ObjectIdentifier:
			oid, _ := v.Value.(string)
			e, err := snmp.TrapLookup(oid)
			if err != nil {
				s.acc.AddError(fmt.Errorf("resolving value OID %s from %s: %w", oid, addr.IP, err))
				return
			}
			if v.Name == ".1.3.6.1.6.3.1.1.4.1.0" { // SNMPv2-MIB::snmpTrapOID.0 names the trap
				setTrap(oid, e)
				continue
			}
			value = e.OidText
		case gosnmp.OctetString:
			b, _ := v.Value.([]byte)
			if utf8.Valid(b) {
				value = string(b)
			} else {
				value = hex.EncodeToString(b)
			}
		}
		e, err := snmp.TrapLookup(v.Name)
		if err != nil {
			s.acc.AddError(fmt.Errorf("resolving OID %s from %s: %w", v.Name, addr.IP, err))
			return
		}
		if val, ok := morse.ValueOf(value); ok {
			fields = append(fields, morse.Field{Key: e.OidText, Value: val})
		}
	}
	if p.Version == gosnmp.Version3 {
		if p.ContextName != "" {
			tags = append(tags, morse.Tag{Key: "context_name", Value: p.ContextName})
		}
		if p.ContextEngineID != "" {
			tags = append(tags, morse.Tag{Key: "engine_id", Value: fmt.Sprintf("%x", p.ContextEngineID)})
		}
	} else if p.Community != "" {
		tags = append(tags, morse.Tag{Key: "community", Value: p.Community})
	}
	s.acc.AddMetric(morse.NewMetric("snmp_trap", tags, dedupFields(fields), now))
}

// dedupFields keeps the last value of a repeated name, as Telegraf's field map does.
func dedupFields(fs []morse.Field) []morse.Field {
	out := fs[:0]
	for _, f := range fs {
		replaced := false
		for i := range out {
			if out[i].Key == f.Key {
				out[i].Value, replaced = f.Value, true
				break
			}
		}
		if !replaced {
			out = append(out, f)
		}
	}
	return out
}
