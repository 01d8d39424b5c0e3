package questdb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// settings are the connection settings, from the TOML keys or from a QuestDB client
// configuration string: what the senders need, resolved and checked.
type settings struct {
	http          bool   // ILP over HTTP; false: ILP over TCP
	tls           bool   // https or tcps
	addr          string // host:port
	username      string // HTTP basic auth user, or the TCP key id
	password      string // HTTP basic auth password
	token         string // HTTP bearer token, or the TCP private key (base64url)
	timeout       time.Duration
	minThroughput int // bytes per second that extend the timeout of a large request
	maxNameLen    int
	tlsInsecure   bool   // tls_verify=unsafe_off
	tlsRoots      string // tls_roots: a PEM file of CAs to trust
}

// QuestDB's client defaults (request_timeout, request_min_throughput).
const (
	DefaultTimeout       = 10 * time.Second
	DefaultMinThroughput = 100 * 1024
	defaultHTTPPort      = "9000"
	defaultTCPPort       = "9009"
)

// parseConf reads a QuestDB client configuration string, such as
// "http::addr=localhost:9000;username=admin;password=quest;", as QuestDB's official clients
// do: a schema (http, https, tcp, tcps), "::", then key=value pairs each ended by ';', where
// ";;" stands for a ';' inside a value. Keys that only tune the official clients' own
// buffering and retries (auto_flush*, init_buf_size, max_buf_size, retry_timeout) are
// accepted and have no effect: morse batches with metric_batch_size and flush_interval and
// retries by its own rules. An unknown key is an error, as in the official clients.
func parseConf(conf string) (settings, error) {
	schema, rest, ok := strings.Cut(conf, "::")
	if !ok {
		return settings{}, fmt.Errorf("no schema: expected e.g. \"http::addr=localhost:9000;\"")
	}
	s := settings{timeout: DefaultTimeout, minThroughput: DefaultMinThroughput, maxNameLen: DefaultMaxNameLen}
	switch schema {
	case "http", "https":
		s.http = true
	case "tcp", "tcps":
	default:
		return settings{}, fmt.Errorf("schema %q: must be http, https, tcp or tcps", schema)
	}
	s.tls = strings.HasSuffix(schema, "s")
	pairs, err := confPairs(rest)
	if err != nil {
		return settings{}, err
	}
	for _, kv := range pairs {
		if err := s.setConfKey(kv[0], kv[1]); err != nil {
			return settings{}, fmt.Errorf("%s: %w", kv[0], err)
		}
	}
	if s.addr == "" {
		return settings{}, fmt.Errorf("addr is missing")
	}
	s.addr = withDefaultPort(s.addr, s.http)
	return s, nil
}

// withDefaultPort adds QuestDB's port for the protocol to an address without one, as
// QuestDB's clients do: 9000 for HTTP, 9009 for TCP.
func withDefaultPort(addr string, http bool) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	port := defaultHTTPPort
	if !http {
		port = defaultTCPPort
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), port)
}

// confPairs splits "k=v;k=v;" into pairs, reading ";;" as a ';' in a value.
func confPairs(s string) ([][2]string, error) {
	var pairs [][2]string
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		if !ok || key == "" || strings.Contains(key, ";") {
			return nil, fmt.Errorf("expected key=value; at %q", s)
		}
		var val strings.Builder
		for {
			i := strings.IndexByte(rest, ';')
			if i < 0 { // the last pair may omit its ';'
				val.WriteString(rest)
				rest = ""
				break
			}
			val.WriteString(rest[:i])
			if i+1 < len(rest) && rest[i+1] == ';' {
				val.WriteByte(';')
				rest = rest[i+2:]
				continue
			}
			rest = rest[i+1:]
			break
		}
		if val.Len() == 0 {
			return nil, fmt.Errorf("%s: empty value", key)
		}
		pairs = append(pairs, [2]string{key, val.String()})
		s = rest
	}
	return pairs, nil
}

// setConfKey applies one key of a configuration string.
func (s *settings) setConfKey(key, val string) error {
	switch key {
	case "addr":
		s.addr = val
	case "username":
		s.username = val
	case "password":
		if !s.http {
			return fmt.Errorf("only ILP over HTTP takes a password; over TCP give username (the key id) and token")
		}
		s.password = val
	case "token":
		s.token = val
	case "token_x", "token_y":
		// The public key, which some clients want; it follows from the private key.
	case "tls_verify":
		switch val {
		case "on":
		case "unsafe_off":
			s.tlsInsecure = true
		default:
			return fmt.Errorf("%q: must be on or unsafe_off", val)
		}
	case "tls_roots":
		s.tlsRoots = val
	case "tls_roots_password":
		return fmt.Errorf("Java key stores are not supported; give tls_roots a PEM file")
	case "tls_ca":
		switch val {
		case "os_roots", "webpki_roots", "webpki_and_os_roots", "pem_file":
			// The system's roots, or tls_roots' PEM file when it is given.
		default:
			return fmt.Errorf("%q: must be os_roots, webpki_roots, webpki_and_os_roots or pem_file", val)
		}
	case "request_timeout":
		ms, err := positiveInt(val)
		s.timeout = time.Duration(ms) * time.Millisecond
		return err
	case "request_min_throughput":
		n, err := positiveInt(val)
		s.minThroughput = n
		return err
	case "max_name_len":
		n, err := positiveInt(val)
		s.maxNameLen = n
		return err
	case "protocol_version":
		if val != "1" && val != "auto" {
			return fmt.Errorf("%q: morse writes text ILP, protocol version 1; use 1 or auto", val)
		}
	case "auto_flush", "auto_flush_rows", "auto_flush_bytes", "auto_flush_interval",
		"init_buf_size", "max_buf_size", "retry_timeout":
		// The official clients' own batching and retries; see parseConf.
	default:
		return fmt.Errorf("unknown key")
	}
	return nil
}

func positiveInt(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: must be a positive integer", v)
	}
	return n, nil
}

// resolve builds the settings from the output's options: from conf when it is set, else
// from the TOML keys. Errors name the key at fault.
func (o *QuestDB) resolve() (settings, error) {
	if o.Conf != "" {
		if o.Addr != "" || o.Protocol != "" || o.Username != "" || o.Password != "" || o.Token != "" {
			return settings{}, morse.Errorf("conf", "set either conf or addr, protocol, username, password and token, not both")
		}
		s, err := parseConf(string(o.Conf))
		if err != nil {
			// The string may hold a password: the error names the key, never the value.
			return settings{}, morse.Errorf("conf", "%v", err)
		}
		return s, checkToken(s)
	}
	s := settings{
		username: o.Username, password: string(o.Password), token: string(o.Token),
		timeout: time.Duration(o.Timeout), minThroughput: int(o.MinThroughput), maxNameLen: o.MaxNameLen,
	}
	switch o.Protocol {
	case "", "http", "https":
		s.http = true
	case "tcp", "tcps":
		if o.Password != "" {
			return settings{}, morse.Errorf("password", "only ILP over HTTP takes a password; over TCP give username (the key id) and token")
		}
	default:
		return settings{}, morse.Errorf("protocol", "%q: must be \"http\" or \"tcp\" (or \"https\", \"tcps\")", o.Protocol)
	}
	s.tls = strings.HasSuffix(o.Protocol, "s")
	s.addr = o.Addr
	if s.addr == "" {
		s.addr = "localhost"
	}
	s.addr = withDefaultPort(s.addr, s.http)
	return s, checkToken(s)
}

// checkToken checks the settings that only make sense together, and the TCP key.
func checkToken(s settings) error {
	if s.http {
		if s.token != "" && (s.username != "" || s.password != "") {
			return morse.Errorf("token", "give either a token or username and password, not both")
		}
		return nil
	}
	if (s.username == "") != (s.token == "") {
		return morse.Errorf("token", "ILP over TCP authenticates with both username (the key id) and token (the private key)")
	}
	if s.token != "" {
		if _, err := tcpKey(s.token); err != nil {
			return morse.Errorf("token", "%v", err)
		}
	}
	return nil
}

// tcpKey decodes the private key of ILP/TCP authentication: the P-256 scalar d in base64url,
// as QuestDB's clients take it.
func tcpKey(token string) (*ecdsa.PrivateKey, error) {
	d, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(token, "="))
	if err != nil {
		return nil, fmt.Errorf("not base64url: %w", err)
	}
	if len(d) < 32 { // a leading zero byte may have been dropped
		d = append(make([]byte, 32-len(d)), d...)
	}
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return nil, fmt.Errorf("not a P-256 private key: %w", err)
	}
	return key, nil
}
