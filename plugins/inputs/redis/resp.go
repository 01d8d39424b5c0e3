package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The timeouts of go-redis, which Telegraf's plugin uses with its defaults: 5s to connect,
// 3s to read an answer and to write a command. A gather's own deadline shortens them.
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 3 * time.Second
)

// ServerError is an error answer of the server (a RESP "-" reply), such as WRONGPASS.
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return "redis: " + e.Msg }

// errNil is the answer to a command about a missing key.
var errNil = errors.New("redis: nil")

// conn is a minimal RESP2 client: commands as arrays of bulk strings, answers read into
// int64, string, nil or []any. One gather uses it at a time.
type conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

// dial connects to network ("tcp" or "unix") addr, over TLS when tlsCfg is set, and
// authenticates when password is set.
func dial(ctx context.Context, network, addr string, tlsCfg *tls.Config, username, password string) (*conn, error) {
	d := &net.Dialer{Timeout: dialTimeout}
	var c net.Conn
	var err error
	if tlsCfg != nil {
		c, err = (&tls.Dialer{NetDialer: d, Config: tlsCfg}).DialContext(ctx, network, addr)
	} else {
		c, err = d.DialContext(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, r: bufio.NewReaderSize(c, 16<<10), w: bufio.NewWriter(c)}
	if password != "" || username != "" {
		args := []any{"AUTH", password}
		if username != "" {
			args = []any{"AUTH", username, password}
		}
		if _, err := cn.do(ctx, args...); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("authenticating: %w", err)
		}
	}
	return cn, nil
}

func (cn *conn) close() error { return cn.c.Close() }

// do sends one command and reads its answer, within ioTimeout and ctx's deadline.
func (cn *conn) do(ctx context.Context, args ...any) (any, error) {
	deadline := time.Now().Add(ioTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := cn.c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// A cancelled gather (the agent stopping) ends a read that waits.
	stop := context.AfterFunc(ctx, func() { _ = cn.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	cn.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		s := fmt.Sprint(a)
		cn.w.WriteString("$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n")
	}
	if err := cn.w.Flush(); err != nil {
		return nil, err
	}
	return cn.read()
}

func (cn *conn) line() (string, error) {
	l, err := cn.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return "", fmt.Errorf("redis: malformed answer %q", l)
	}
	return l[:len(l)-2], nil
}

// read reads one RESP2 answer.
func (cn *conn) read() (any, error) {
	l, err := cn.line()
	if err != nil {
		return nil, err
	}
	switch l[0] {
	case '+':
		return l[1:], nil
	case '-':
		return nil, &ServerError{Msg: l[1:]}
	case ':':
		return strconv.ParseInt(l[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(l[1:])
		if err != nil || n < -1 || n > 512<<20 {
			return nil, fmt.Errorf("redis: bad bulk length %q", l)
		}
		if n == -1 {
			return nil, errNil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(cn.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(l[1:])
		if err != nil || n < -1 || n > 1<<20 {
			return nil, fmt.Errorf("redis: bad array length %q", l)
		}
		out := make([]any, 0, max(n, 0))
		for range n {
			v, err := cn.read()
			if err != nil && !errors.Is(err, errNil) {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("redis: unknown answer %q", l)
}
