// Package kafka holds what morse's Kafka plugins share, as Telegraf's plugins/common/kafka
// does for its own: the client options with Telegraf's TOML keys (client id, SASL, TLS,
// SOCKS5, keep-alive, metadata retries) and their translation into options of the franz-go
// client (github.com/twmb/franz-go), a pure-Go client that is well kept and negotiates
// protocol versions with the brokers by itself.
package kafka

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// ClientConfig is the part of a Kafka plugin's config that sets up the connection. Embed it;
// its keys are Telegraf's.
type ClientConfig struct {
	// ClientID names the client to the brokers, in their logs and quotas.
	ClientID string `toml:"client_id"`
	// Version is Telegraf's minimal Kafka version for sarama. franz-go asks each broker
	// which versions it speaks, so the key is accepted and has no effect.
	Version string `toml:"version"`
	// EnableTLS turns TLS on or off; unset, TLS is on when any tls_* option is set.
	EnableTLS *bool `toml:"enable_tls"`
	// KeepAlivePeriod is the TCP keep-alive period; unset or zero keeps the system's.
	KeepAlivePeriod *morse.Duration `toml:"keep_alive_period"`

	// The metadata options tune sarama's retries of metadata requests. franz-go retries
	// every request with one backoff: metadata_retry_backoff, doubled from try to try up
	// to metadata_retry_max_duration when metadata_retry_type is "exponential".
	MetadataFull             *bool          `toml:"metadata_full"`
	MetadataRetryMax         int            `toml:"metadata_retry_max"`
	MetadataRetryType        string         `toml:"metadata_retry_type"`
	MetadataRetryBackoff     morse.Duration `toml:"metadata_retry_backoff"`
	MetadataRetryMaxDuration morse.Duration `toml:"metadata_retry_max_duration"`

	SASLConfig
	// Config is the client TLS, Telegraf's tls_* keys; enable_tls, when set, decides
	// whether TLS is on.
	tlsclient.Config
	Socks5Config

	// Certificate, Key and CA are Telegraf's deprecated names of tls_cert, tls_key and
	// tls_ca.
	Certificate string `toml:"certificate"`
	Key         string `toml:"key"`
	CA          string `toml:"ca"`

	// MetadataMinAge is the least time between two metadata requests; zero means 1 s.
	// franz-go's own default, 5 s, makes the first records for a topic created a moment
	// ago wait that long.
	MetadataMinAge time.Duration `toml:"-"`
}

// Validate reports options that cannot work, each naming its key.
func (c *ClientConfig) Validate() error {
	var errs []error
	switch strings.ToLower(c.MetadataRetryType) {
	case "", "constant", "exponential":
	default:
		errs = append(errs, morse.Errorf("metadata_retry_type", "must be \"constant\" or \"exponential\", got %q", c.MetadataRetryType))
	}
	if c.MetadataRetryBackoff < 0 || c.MetadataRetryMaxDuration < 0 {
		errs = append(errs, morse.Errorf("metadata_retry_backoff", "durations must not be negative"))
	}
	c.legacyTLS()
	errs = append(errs, c.SASLConfig.validate()...)
	errs = append(errs, c.Config.Validate())
	errs = append(errs, c.Socks5Config.validate()...)
	return errors.Join(errs...)
}

// legacyTLS moves the deprecated certificate, key and ca into the tls_* options, as
// Telegraf does when certificate is set.
func (c *ClientConfig) legacyTLS() {
	if c.Certificate != "" {
		c.Config.Cert, c.Config.Key, c.Config.CA = c.Certificate, c.Key, c.CA
	}
}

// Warnings lists the options that are accepted but change nothing, for the plugin to log
// once at Init.
func (c *ClientConfig) Warnings() []string {
	var w []string
	if c.Version != "" {
		w = append(w, "version is not needed and has no effect: the client negotiates protocol versions with each broker")
	}
	if c.MetadataFull != nil && *c.MetadataFull {
		w = append(w, "metadata_full has no effect: the client asks for the metadata of the topics it uses")
	}
	if c.MetadataRetryMax != 0 {
		w = append(w, "metadata_retry_max has no effect: metadata requests are retried as long as the records that need them")
	}
	if c.SASLVersion != nil && *c.SASLVersion == 0 {
		w = append(w, "sasl_version = 0 has no effect: the client always uses SASL handshake v1, which Azure Event Hubs also accepts")
	}
	if c.Certificate != "" || c.Key != "" || c.CA != "" {
		w = append(w, "certificate, key and ca are deprecated: use tls_cert, tls_key and tls_ca")
	}
	return w
}

// tlsConfig is the TLS to the brokers, nil when it is off: enable_tls decides when set,
// else whether any tls_* key asks for TLS.
func (c *ClientConfig) tlsConfig() (*tls.Config, error) {
	on := c.Config.Configured()
	if c.EnableTLS != nil {
		on = *c.EnableTLS
	}
	if !on {
		return nil, nil
	}
	cfg, err := c.Config.TLSConfig()
	if err == nil && cfg == nil { // enable_tls alone: verified defaults, at least TLS 1.2
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return cfg, err
}

// Options returns the franz-go client options for these settings and brokers; log receives
// the client's own errors. Call Validate first.
func (c *ClientConfig) Options(brokers []string, log *slog.Logger) ([]kgo.Opt, error) {
	c.legacyTLS()
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(cmp.Or(c.ClientID, "morse")),
		kgo.MetadataMinAge(cmp.Or(c.MetadataMinAge, time.Second)),
		kgo.WithLogger(&logger{log: log}),
	}
	if fn := c.backoff(); fn != nil {
		opts = append(opts, kgo.RetryBackoffFn(fn))
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	dial, err := c.dialer(tlsCfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.Dialer(dial))
	mech, err := c.SASLConfig.mechanism()
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

// backoff is the retry backoff that the metadata_retry_* options ask for; nil keeps
// franz-go's.
func (c *ClientConfig) backoff() func(int) time.Duration {
	base := time.Duration(c.MetadataRetryBackoff)
	exponential := strings.EqualFold(c.MetadataRetryType, "exponential")
	if base == 0 && !exponential {
		return nil
	}
	base = cmp.Or(base, 250*time.Millisecond) // sarama's default
	limit := time.Duration(c.MetadataRetryMaxDuration)
	return func(tries int) time.Duration {
		if !exponential {
			return base
		}
		d := time.Duration(float64(base) * math.Pow(2, float64(max(tries-1, 0))))
		if limit > 0 && d > limit || d <= 0 {
			return cmp.Or(limit, base)
		}
		return d
	}
}

// logger hands the client's errors to slog. Its warnings are left out: they repeat on every
// retry during an outage, which the plugins report themselves, throttled.
type logger struct{ log *slog.Logger }

func (l *logger) Level() kgo.LogLevel { return kgo.LogLevelError }

func (l *logger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if l.log != nil && level == kgo.LogLevelError {
		l.log.Error("kafka client: "+msg, keyvals...)
	}
}

// ValidTopic reports why t cannot name a Kafka topic, or nil: Kafka allows 1 to 249 ASCII
// letters, digits, '.', '_' and '-', but not "." or "..".
func ValidTopic(t string) error {
	if t == "" || t == "." || t == ".." || len(t) > 249 {
		return fmt.Errorf("topic %q: a topic name has 1 to 249 characters and is not \".\" or \"..\"", t)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic %q: Kafka allows only ASCII letters, digits, '.', '_' and '-'", t)
		}
	}
	return nil
}

// CheckDataFormat checks a Kafka plugin's data_format: the formats that morse both writes
// and reads.
func CheckDataFormat(f string) error {
	switch f {
	case "", "influx", "json", "msgpack":
		return nil
	}
	return morse.Errorf("data_format", "%q is not supported: use \"influx\", \"json\" or \"msgpack\"", f)
}
