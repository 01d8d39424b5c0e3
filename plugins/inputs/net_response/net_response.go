// Package net_response is the inputs.net_response plugin: every interval it connects to
// one TCP or UDP address, optionally sends a string and looks for another in the first
// line of the answer, and reports the response time and result, with Telegraf 1.39.3's
// options, measurement, tags and fields (result_code is unsigned, as Telegraf adds it).
package net_response

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"regexp"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Collect response time of a TCP or UDP connection"

//go:embed sample.conf
var sampleConfig string

// NetResponse is the inputs.net_response plugin and its configuration. Build it with New.
type NetResponse struct {
	// Address is host:port; an empty host is localhost.
	Address string `toml:"address"`
	// Timeout bounds the TCP connect, 1s by default.
	Timeout morse.Duration `toml:"timeout"`
	// ReadTimeout bounds the wait for the answer, 1s by default.
	ReadTimeout morse.Duration `toml:"read_timeout"`
	// Send is written once connected; required for UDP.
	Send string `toml:"send"`
	// Expect is a regular expression looked for in the answer's first line (TCP) or first
	// datagram (UDP); required for UDP.
	Expect string `toml:"expect"`
	// Protocol is "tcp" or "udp".
	Protocol string `toml:"protocol"`

	expect *regexp.Regexp
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input       = (*NetResponse)(nil)
	_ morse.Validator   = (*NetResponse)(nil)
	_ morse.Initializer = (*NetResponse)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *NetResponse {
	return &NetResponse{Protocol: "tcp", Address: "localhost:80",
		Timeout: morse.Duration(time.Second), ReadTimeout: morse.Duration(time.Second)}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "net_response",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (n *NetResponse) Validate() error {
	var errs []error
	if n.Protocol != "tcp" && n.Protocol != "udp" {
		errs = append(errs, morse.Errorf("protocol", "%q: use \"tcp\" or \"udp\"", n.Protocol))
	}
	if n.Protocol == "udp" && n.Send == "" {
		errs = append(errs, morse.Errorf("send", "send string cannot be empty with protocol udp"))
	}
	if n.Protocol == "udp" && n.Expect == "" {
		errs = append(errs, morse.Errorf("expect", "expected string cannot be empty with protocol udp"))
	}
	if _, port, err := net.SplitHostPort(n.Address); err != nil {
		errs = append(errs, morse.Errorf("address", "%v", err))
	} else if port == "" {
		errs = append(errs, morse.Errorf("address", "bad port in %q", n.Address))
	}
	if _, err := regexp.Compile(".*" + n.Expect + ".*"); err != nil {
		errs = append(errs, morse.Errorf("expect", "%v", err))
	}
	if n.Timeout < 0 || n.ReadTimeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "timeout and read_timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// Init applies the defaults of options left at zero and compiles expect.
func (n *NetResponse) Init() error {
	if err := n.Validate(); err != nil {
		return err
	}
	if n.Timeout == 0 {
		n.Timeout = morse.Duration(time.Second)
	}
	if n.ReadTimeout == 0 {
		n.ReadTimeout = morse.Duration(time.Second)
	}
	if host, port, _ := net.SplitHostPort(n.Address); host == "" {
		n.Address = net.JoinHostPort("localhost", port)
	}
	n.expect = regexp.MustCompile(".*" + n.Expect + ".*") // Telegraf's pattern; Validate compiled it
	return nil
}

// Telegraf's results and their codes.
const (
	success          = "success"
	timeout          = "timeout"
	connectionFailed = "connection_failed"
	readFailed       = "read_failed"
	stringMismatch   = "string_mismatch"
)

var resultCodes = map[string]uint64{success: 0, timeout: 1, connectionFailed: 2, readFailed: 3, stringMismatch: 4}

// Gather probes the address once. A failed probe is a metric with its result, not an
// error; only a failed write to an open connection is an error, as in Telegraf.
func (n *NetResponse) Gather(ctx context.Context, acc morse.Accumulator) error {
	if n.expect == nil {
		if err := n.Init(); err != nil {
			return err
		}
	}
	host, port, err := net.SplitHostPort(n.Address)
	if err != nil {
		return err
	}
	var (
		result  string
		elapsed time.Duration
	)
	if n.Protocol == "udp" {
		result, elapsed, err = n.udp(ctx)
	} else {
		result, elapsed, err = n.tcp(ctx)
	}
	if err != nil {
		return err
	}
	fields := map[string]any{"result_code": resultCodes[result], "result_type": result}
	if n.Expect != "" {
		fields["string_found"] = result == success // deprecated in Telegraf 1.4, still emitted
	}
	if elapsed >= 0 {
		fields["response_time"] = elapsed.Seconds()
	}
	acc.AddFields("net_response", fields, map[string]string{
		"server": host, "port": port, "protocol": n.Protocol, "result": result})
	return nil
}

// tcp connects, sends and reads as Telegraf does. The elapsed time is -1 when the connect
// failed, which Telegraf reports without response_time.
func (n *NetResponse) tcp(ctx context.Context) (string, time.Duration, error) {
	start := time.Now()
	d := net.Dialer{Timeout: time.Duration(n.Timeout)}
	conn, err := d.DialContext(ctx, "tcp", n.Address)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return timeout, -1, nil
		}
		return connectionFailed, -1, nil
	}
	defer conn.Close()
	elapsed := time.Since(start)
	if n.Send != "" {
		if _, err := conn.Write([]byte(n.Send)); err != nil {
			return "", 0, fmt.Errorf("sending to %s: %w", n.Address, err)
		}
		elapsed = time.Since(start)
	}
	if n.Expect == "" {
		return success, elapsed, nil
	}
	if err := conn.SetReadDeadline(time.Now().Add(time.Duration(n.ReadTimeout))); err != nil {
		return "", 0, fmt.Errorf("setting the read deadline: %w", err)
	}
	line, err := textproto.NewReader(bufio.NewReader(conn)).ReadLine()
	elapsed = time.Since(start)
	switch {
	case err != nil:
		return readFailed, elapsed, nil
	case n.expect.FindString(line) != "":
		return success, elapsed, nil
	}
	return stringMismatch, elapsed, nil
}

// udp sends one datagram and reads one, as Telegraf does. A read that fails gives no
// response time, as in Telegraf.
func (n *NetResponse) udp(ctx context.Context) (string, time.Duration, error) {
	start := time.Now()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", n.Address)
	if err != nil {
		return connectionFailed, -1, nil
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(n.Send)); err != nil {
		return "", 0, fmt.Errorf("sending to %s: %w", n.Address, err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(time.Duration(n.ReadTimeout))); err != nil {
		return "", 0, fmt.Errorf("setting the read deadline: %w", err)
	}
	buf := make([]byte, 1024)
	read, err := conn.Read(buf)
	elapsed := time.Since(start)
	if err != nil {
		return readFailed, -1, nil
	}
	if n.expect.Find(buf[:read]) != nil {
		return success, elapsed, nil
	}
	return stringMismatch, elapsed, nil
}
