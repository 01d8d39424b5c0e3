// Package influxdb is the inputs.influxdb plugin: every interval it reads the expvar JSON of
// InfluxDB 1.x's /debug/vars (or any service that serves the same shape) from each URL and
// reports Telegraf 1.39.3's measurements: influxdb_<name> for every {"name", "tags",
// "values"} object (values as JSON gives them: numbers are floats), influxdb_memstats,
// influxdb_system, influxdb_build, influxdb_cmdline, influxdb_crypto and influxdb with the
// number of shards. Every metric of one answer has the same time and a url tag.
//
// A URL that cannot be requested, answers other than 200 (InfluxDB's error text quoted) or
// with a body that is not a JSON object is reported through acc.AddError with the URL.
package influxdb

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read InfluxDB-formatted JSON metrics from one or more HTTP endpoints"

//go:embed sample.conf
var sampleConfig string

// DefaultURL is the URL read when urls is empty, as in Telegraf.
const DefaultURL = "http://localhost:8086/debug/vars"

// InfluxDB is the inputs.influxdb plugin and its configuration. Build it with New.
type InfluxDB struct {
	// URLs are the endpoints; DefaultURL when empty.
	URLs []string `toml:"urls"`
	// Username and Password are sent as HTTP basic auth when either is set.
	Username morse.Secret `toml:"username"`
	Password morse.Secret `toml:"password"`
	// Timeout bounds each request and the wait for its headers; 5s by default.
	Timeout morse.Duration `toml:"timeout"`
	tlsclient.Config

	client *http.Client
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input       = (*InfluxDB)(nil)
	_ morse.Validator   = (*InfluxDB)(nil)
	_ morse.Initializer = (*InfluxDB)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *InfluxDB { return &InfluxDB{Timeout: morse.Duration(5 * time.Second)} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "influxdb",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (i *InfluxDB) Validate() error {
	errs := []error{i.Config.Validate()}
	if i.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	for _, raw := range i.URLs {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, morse.Errorf("urls", "%q is not an http:// or https:// URL", raw))
		}
	}
	return errors.Join(errs...)
}

// Init builds the client. As in Telegraf, timeout bounds both the whole request and the
// wait for the answer's headers; zero is no bound.
func (i *InfluxDB) Init() error {
	if len(i.URLs) == 0 {
		i.URLs = []string{DefaultURL}
	}
	tlsCfg, err := i.TLSConfig()
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // Telegraf's transport has no proxy either
	tr.TLSClientConfig = tlsCfg
	tr.ResponseHeaderTimeout = time.Duration(i.Timeout)
	i.client = &http.Client{Transport: tr, Timeout: time.Duration(i.Timeout)}
	return nil
}

// Gather requests every URL at once and waits for all of them.
func (i *InfluxDB) Gather(ctx context.Context, acc morse.Accumulator) error {
	if i.client == nil {
		if err := i.Init(); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for _, u := range i.URLs {
		wg.Go(func() {
			if err := i.gatherURL(ctx, acc, u); err != nil {
				acc.AddError(fmt.Errorf("[url=%s]: %w", u, err))
			}
		})
	}
	wg.Wait()
	return nil
}

func (i *InfluxDB) gatherURL(ctx context.Context, acc morse.Accumulator, u string) error {
	now := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if i.Username.IsSet() || i.Password.IsSet() {
		req.SetBasicAuth(string(i.Username), string(i.Password))
	}
	req.Header.Set("User-Agent", "morse")
	resp, err := i.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readError(resp)
	}
	return decodeVars(resp.Body, func(name string, fields map[string]any, tags map[string]string) {
		if tags != nil { // Telegraf's influxdb measurement (n_shards) has no url tag
			tags["url"] = u
		}
		acc.AddFields(name, fields, tags, now)
	})
}

// APIError is an answer other than 200: its status and, when the body is InfluxDB's JSON
// error, its message.
type APIError struct {
	StatusCode  int
	Reason      string
	Description string `json:"error"`
}

func (e *APIError) Error() string {
	if e.Description != "" {
		return e.Reason + ": " + e.Description
	}
	return e.Reason
}

func readError(resp *http.Response) error {
	e := &APIError{StatusCode: resp.StatusCode, Reason: resp.Status}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err == nil {
		_ = json.Unmarshal(b, e) // a body that is not InfluxDB's JSON leaves the status alone
	}
	return e
}
