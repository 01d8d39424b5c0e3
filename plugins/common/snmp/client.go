// Package snmp holds what inputs.snmp and inputs.snmp_trap share, with Telegraf 1.39.3's
// options and meanings: the client options and the gosnmp connection they make (v1, v2c,
// v3 with USM authentication and privacy), MIB loading and OID translation with gosmi, the
// field and table definitions with their value conversions, and the walk of a table that
// streams its rows instead of holding the whole table.
package snmp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/morse-agent/morse"
)

// ClientConfig is the connection part of inputs.snmp's options, as Telegraf names them.
type ClientConfig struct {
	// Timeout bounds each request; 5s by default.
	Timeout morse.Duration `toml:"timeout"`
	// Retries is the number of times a request is resent after a timeout; 3 by default.
	Retries int `toml:"retries"`
	// Version is 1, 2 (v2c) or 3.
	Version uint8 `toml:"version"`
	// UnconnectedUDPSocket accepts answers from any address, not only the agent's.
	UnconnectedUDPSocket bool `toml:"unconnected_udp_socket"`
	// Community is v1's and v2c's community; "public" by default.
	Community string `toml:"community"`
	// MaxRepetitions is GETBULK's max-repetitions (v2c and v3); 10 by default.
	MaxRepetitions uint32 `toml:"max_repetitions"`
	// ContextName is v3's context.
	ContextName string `toml:"context_name"`
	// SecLevel is "noAuthNoPriv", "authNoPriv" or "authPriv" (v3).
	SecLevel string `toml:"sec_level"`
	// SecName is v3's user.
	SecName string `toml:"sec_name"`
	// AuthProtocol is "MD5", "SHA", "SHA224", "SHA256", "SHA384", "SHA512" or "".
	AuthProtocol string `toml:"auth_protocol"`
	// AuthPassword is v3's authentication passphrase.
	AuthPassword morse.Secret `toml:"auth_password"`
	// PrivProtocol is "DES", "AES", "AES192", "AES192C", "AES256", "AES256C" or "".
	PrivProtocol string `toml:"priv_protocol"`
	// PrivPassword is v3's privacy passphrase.
	PrivPassword morse.Secret `toml:"priv_password"`
	// Path lists the directories whose MIBs the gosmi translator loads, subdirectories
	// included.
	Path []string `toml:"path"`
}

// DefaultClientConfig returns Telegraf's defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{Timeout: morse.Duration(5 * time.Second), Retries: 3, Version: 2,
		Community: "public", MaxRepetitions: 10, Path: []string{"/usr/share/snmp/mibs"}}
}

var authProtocols = map[string]gosnmp.SnmpV3AuthProtocol{
	"": gosnmp.NoAuth, "md5": gosnmp.MD5, "sha": gosnmp.SHA, "sha224": gosnmp.SHA224,
	"sha256": gosnmp.SHA256, "sha384": gosnmp.SHA384, "sha512": gosnmp.SHA512,
}

var privProtocols = map[string]gosnmp.SnmpV3PrivProtocol{
	"": gosnmp.NoPriv, "des": gosnmp.DES, "aes": gosnmp.AES, "aes192": gosnmp.AES192,
	"aes192c": gosnmp.AES192C, "aes256": gosnmp.AES256, "aes256c": gosnmp.AES256C,
}

var secLevels = map[string]gosnmp.SnmpV3MsgFlags{
	"": gosnmp.NoAuthNoPriv, "noauthnopriv": gosnmp.NoAuthNoPriv,
	"authnopriv": gosnmp.AuthNoPriv, "authpriv": gosnmp.AuthPriv,
}

// Validate reports every problem of the options, each under its key.
func (c *ClientConfig) Validate() error {
	var errs []error
	if c.Version > 3 {
		errs = append(errs, morse.Errorf("version", "%d: use 1, 2 or 3", c.Version))
	}
	if _, ok := secLevels[strings.ToLower(c.SecLevel)]; !ok {
		errs = append(errs, morse.Errorf("sec_level", "%q: use noAuthNoPriv, authNoPriv or authPriv", c.SecLevel))
	}
	if _, ok := authProtocols[strings.ToLower(c.AuthProtocol)]; !ok {
		errs = append(errs, morse.Errorf("auth_protocol", "%q: use MD5, SHA, SHA224, SHA256, SHA384, SHA512 or \"\"", c.AuthProtocol))
	}
	if _, ok := privProtocols[strings.ToLower(c.PrivProtocol)]; !ok {
		errs = append(errs, morse.Errorf("priv_protocol", "%q: use DES, AES, AES192, AES192C, AES256, AES256C or \"\"", c.PrivProtocol))
	}
	if c.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	if c.Retries < 0 {
		errs = append(errs, morse.Errorf("retries", "must not be negative"))
	}
	return errors.Join(errs...)
}

// NewClient returns an unconnected gosnmp client for agent, [scheme://]host[:port] with
// scheme udp (the default), udp4, udp6, tcp, tcp4 or tcp6 and port 161 by default.
func (c *ClientConfig) NewClient(agent string) (*gosnmp.GoSNMP, error) {
	gs := &gosnmp.GoSNMP{Timeout: time.Duration(c.Timeout), Retries: c.Retries,
		UseUnconnectedUDPSocket: c.UnconnectedUDPSocket, MaxRepetitions: c.MaxRepetitions,
		MaxOids: gosnmp.MaxOids,
		// Some devices answer with OIDs that do not strictly increase; the walk ends
		// when an answer leaves the column instead (and at the row cap).
		AppOpts: map[string]any{"c": true}}
	switch c.Version {
	case 0, 2:
		gs.Version = gosnmp.Version2c
	case 1:
		gs.Version = gosnmp.Version1
	case 3:
		gs.Version = gosnmp.Version3
	default:
		return nil, fmt.Errorf("invalid version %d", c.Version)
	}
	gs.Community = c.Community
	if gs.Community == "" {
		gs.Community = "public"
	}
	if c.Version == 3 {
		if err := c.setUSM(gs); err != nil {
			return nil, err
		}
	}
	if err := setAgent(gs, agent); err != nil {
		return nil, err
	}
	return gs, nil
}

func (c *ClientConfig) setUSM(gs *gosnmp.GoSNMP) error {
	level, ok := secLevels[strings.ToLower(c.SecLevel)]
	if !ok {
		return fmt.Errorf("invalid sec_level %q", c.SecLevel)
	}
	auth, ok := authProtocols[strings.ToLower(c.AuthProtocol)]
	if !ok {
		return fmt.Errorf("invalid auth_protocol %q", c.AuthProtocol)
	}
	priv, ok := privProtocols[strings.ToLower(c.PrivProtocol)]
	if !ok {
		return fmt.Errorf("invalid priv_protocol %q", c.PrivProtocol)
	}
	gs.ContextName = c.ContextName
	gs.SecurityModel = gosnmp.UserSecurityModel
	gs.MsgFlags = level
	gs.SecurityParameters = &gosnmp.UsmSecurityParameters{UserName: c.SecName,
		AuthenticationProtocol: auth, AuthenticationPassphrase: string(c.AuthPassword),
		PrivacyProtocol: priv, PrivacyPassphrase: string(c.PrivPassword)}
	return nil
}

func setAgent(gs *gosnmp.GoSNMP, agent string) error {
	if !strings.Contains(agent, "://") {
		agent = "udp://" + agent
	}
	u, err := url.Parse(agent)
	if err != nil {
		return fmt.Errorf("parsing agent %q: %w", agent, err)
	}
	switch u.Scheme {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		gs.Transport = u.Scheme
	default:
		return fmt.Errorf("unsupported scheme %q: use udp, udp4, udp6, tcp, tcp4 or tcp6", u.Scheme)
	}
	gs.Target = u.Hostname()
	port := u.Port()
	if port == "" {
		port = "161"
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("parsing port of %q: %w", agent, err)
	}
	gs.Port = uint16(p)
	return nil
}

// Explain turns gosnmp's v3 errors into the option they point at, as Telegraf words them.
func Explain(err error) error {
	switch {
	case errors.Is(err, gosnmp.ErrUnknownSecurityLevel):
		return fmt.Errorf("unknown security level (sec_level): %w", err)
	case errors.Is(err, gosnmp.ErrUnknownUsername):
		return fmt.Errorf("unknown username (sec_name): %w", err)
	case errors.Is(err, gosnmp.ErrWrongDigest),
		// gosnmp cannot check the agent's report of a wrong digest, which is signed
		// with the key the agent knows, and says only this (not a typed error).
		err != nil && strings.Contains(err.Error(), "not authentic"):
		return fmt.Errorf("wrong digest (auth_protocol, auth_password): %w", err)
	case errors.Is(err, gosnmp.ErrDecryption):
		return fmt.Errorf("decryption error (priv_protocol, priv_password): %w", err)
	}
	return err
}
