// Package redis is the inputs.redis plugin: every interval it sends INFO ALL to each server
// and reports Telegraf 1.39.3's measurements, tags, fields and field types: redis (the
// scalar values, with Telegraf's renames and its fixed types), redis_keyspace,
// redis_cmdstat, redis_latency_percentiles_usec, redis_replication, redis_errorstat, and
// redis_commands for the [[commands]] configured.
//
// It speaks RESP2 through a small client of its own (resp.go) instead of go-redis: one
// connection per server, kept between gathers, with go-redis' timeouts.
package redis

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics from one or many redis servers"

//go:embed sample.conf
var sampleConfig string

// Redis is the inputs.redis plugin and its configuration.
type Redis struct {
	// Servers are tcp://[user:password@]host[:port] or unix:///path URLs; an address without
	// a scheme is taken as tcp://. Empty means tcp://localhost:6379.
	Servers []string `toml:"servers"`
	// Commands are extra commands whose answers become fields of redis_commands.
	Commands []Command `toml:"commands"`
	// Username and Password authenticate (ACL, Redis 6+); they take precedence over the
	// URL's.
	Username morse.Secret `toml:"username"`
	Password morse.Secret `toml:"password"`
	tlsclient.Config

	servers []*server
}

// Command is one [[inputs.redis.commands]] table.
type Command struct {
	// Command is the command and its arguments, each a separate element.
	Command []any `toml:"command"`
	// Field names the field that gets the answer.
	Field string `toml:"field"`
	// Type is the answer's type: "string", "integer" or "float".
	Type string `toml:"type"`
}

// server is one configured server and its connection.
type server struct {
	network, addr, user, pass string
	tags                      map[string]string

	mu   sync.Mutex // one gather at a time uses the connection
	conn *conn
}

var (
	_ morse.ServiceInput = (*Redis)(nil)
	_ morse.Validator    = (*Redis)(nil)
	_ morse.Initializer  = (*Redis)(nil)
)

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name: "redis", Description: Description, SampleConfig: sampleConfig,
		New: func() morse.Input { return &Redis{} },
	})
}

// Validate reports every problem of the options.
func (r *Redis) Validate() error {
	errs := []error{r.Config.Validate()}
	for _, c := range r.Commands {
		if c.Type != "string" && c.Type != "integer" && c.Type != "float" {
			errs = append(errs, morse.Errorf("commands", `unknown result type: expected one of "string", "integer", "float"; got %q`, c.Type))
		}
		if len(c.Command) == 0 {
			errs = append(errs, morse.Errorf("commands", "field %q: command is empty", c.Field))
		}
	}
	for _, s := range r.Servers {
		if _, err := parseServer(s); err != nil {
			errs = append(errs, morse.Errorf("servers", "%v", err))
		}
	}
	return errors.Join(errs...)
}

func parseServer(s string) (*url.URL, error) {
	if !strings.HasPrefix(s, "tcp://") && !strings.HasPrefix(s, "unix://") {
		s = "tcp://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("unable to parse to address %q: %w", s, err)
	}
	return u, nil
}

// Init resolves the servers, their credentials and tags.
func (r *Redis) Init() error {
	if err := r.Validate(); err != nil {
		return err
	}
	list := r.Servers
	if len(list) == 0 {
		list = []string{"tcp://localhost:6379"}
	}
	r.servers = r.servers[:0]
	for _, raw := range list {
		u, _ := parseServer(raw)
		s := &server{network: u.Scheme, tags: map[string]string{}}
		if u.User != nil {
			s.user = u.User.Username()
			s.pass, _ = u.User.Password()
		}
		if r.Username != "" {
			s.user = string(r.Username)
		}
		if r.Password != "" {
			s.pass = string(r.Password)
		}
		if u.Scheme == "unix" {
			s.addr = u.Path
			s.tags["socket"] = u.Path
		} else {
			s.addr = u.Host
			if u.Port() == "" {
				s.addr = u.Host + ":6379" // go-redis' default port
			}
			s.tags["server"], s.tags["port"] = u.Hostname(), u.Port()
		}
		r.servers = append(r.servers, s)
	}
	return nil
}

// Start does nothing: the connections open on the first gather.
func (r *Redis) Start(context.Context, morse.Accumulator) error { return nil }

// Stop closes the connections.
func (r *Redis) Stop() {
	for _, s := range r.servers {
		s.mu.Lock()
		if s.conn != nil {
			_ = s.conn.close()
			s.conn = nil
		}
		s.mu.Unlock()
	}
}

// Gather queries the servers in parallel; a server that fails adds an error naming it.
func (r *Redis) Gather(ctx context.Context, acc morse.Accumulator) error {
	if r.servers == nil {
		if err := r.Init(); err != nil {
			return err
		}
	}
	tlsCfg, err := r.tlsConfig()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, s := range r.servers {
		wg.Go(func() {
			if err := r.gatherServer(ctx, s, tlsCfg, acc); err != nil {
				acc.AddError(fmt.Errorf("redis %s: %w", s.addr, err))
			}
		})
	}
	wg.Wait()
	return nil
}

// tlsConfig is the TLS of the connections, nil without TLS options (as go-redis).
func (r *Redis) tlsConfig() (*tls.Config, error) {
	if r.Config.Disabled() || !r.Config.Configured() {
		return nil, nil
	}
	return r.Config.TLSConfig()
}

func (r *Redis) gatherServer(ctx context.Context, s *server, tlsCfg *tls.Config, acc morse.Accumulator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		c, err := dial(ctx, s.network, s.addr, tlsCfg, s.user, s.pass)
		if err != nil {
			return err
		}
		s.conn = c
	}
	info, err := s.conn.do(ctx, "INFO", "ALL")
	if err == nil {
		text, ok := info.(string)
		if !ok {
			return fmt.Errorf("INFO answered %T, not text", info)
		}
		gatherInfo(text, time.Now(), acc, s.tags)
		err = r.gatherCommands(ctx, s, acc)
	}
	var se *ServerError
	if err != nil && !errors.As(err, &se) && !errors.Is(err, errNil) {
		// The connection's state is unknown after a network error: start afresh.
		_ = s.conn.close()
		s.conn = nil
	}
	return err
}

// gatherCommands adds redis_commands with one field per configured command; one failure
// leaves the metric out, as in Telegraf.
func (r *Redis) gatherCommands(ctx context.Context, s *server, acc morse.Accumulator) error {
	if len(r.Commands) == 0 {
		return nil // Telegraf's empty redis_commands has no fields and goes nowhere
	}
	fields := make(map[string]any, len(r.Commands))
	for _, c := range r.Commands {
		ans, err := s.conn.do(ctx, c.Command...)
		if err != nil {
			return err
		}
		v, err := convertAnswer(ans, c.Type)
		if err != nil {
			return fmt.Errorf("could not get command result: %w", err)
		}
		fields[c.Field] = v
	}
	acc.AddFields("redis_commands", fields, s.tags)
	return nil
}
