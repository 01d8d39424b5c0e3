package phpfpm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// A minimal FastCGI client (https://fastcgi-archives.github.io/FastCGI_Specification.html):
// one responder request per connection, BEGIN_REQUEST, the PARAMS stream, an empty STDIN,
// then STDOUT and STDERR records until END_REQUEST. That is all a status page needs.

// Record types and the one role and protocol status the client uses.
const (
	fcgiVersion      = 1
	typeBeginRequest = 1
	typeEndRequest   = 3
	typeParams       = 4
	typeStdin        = 5
	typeStdout       = 6
	typeStderr       = 7
	roleResponder    = 1
	requestComplete  = 0
	headerLen        = 8
	maxContent       = 65535
	requestID        = 1
)

// maxResponse bounds what one answer may hold (STDOUT and STDERR together): a full status
// page is about 1 KiB per worker.
const maxResponse = 16 << 20

// protocolStatuses are END_REQUEST's protocol statuses other than complete.
var protocolStatuses = map[byte]string{1: "cannot multiplex", 2: "overloaded", 3: "unknown role"}

// param is one name-value pair of the PARAMS stream; the order is kept.
type param struct{ name, value string }

// fcgiResponse is what a responder answered.
type fcgiResponse struct {
	stdout, stderr []byte
	appStatus      uint32
}

// fcgiDo sends one request over conn, which it closes, and returns the answer. A deadline
// of ctx applies to the whole exchange, and cancelling ctx ends it.
func fcgiDo(ctx context.Context, conn net.Conn, params []param) (*fcgiResponse, error) {
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(d); err != nil {
			return nil, err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	resp, err := exchange(conn, params)
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The connection's deadline is ctx's, and may pass before ctx says so.
		return nil, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return nil, err
}

func exchange(conn net.Conn, params []param) (*fcgiResponse, error) {
	req, err := encodeRequest(params)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("sending the FastCGI request: %w", err)
	}
	return readResponse(bufio.NewReader(conn))
}

// encodeRequest is the whole request: BEGIN_REQUEST (responder, connection not kept), the
// params in as many PARAMS records as they need, and the empty PARAMS and STDIN that end
// both streams.
func encodeRequest(params []param) ([]byte, error) {
	var pairs bytes.Buffer
	for _, p := range params {
		if len(p.name) > 1<<31-1 || len(p.value) > 1<<31-1 {
			return nil, fmt.Errorf("FastCGI param %q is too long", p.name)
		}
		writeLength(&pairs, len(p.name))
		writeLength(&pairs, len(p.value))
		pairs.WriteString(p.name)
		pairs.WriteString(p.value)
	}
	var b bytes.Buffer
	writeRecord(&b, typeBeginRequest, []byte{0, roleResponder, 0, 0, 0, 0, 0, 0})
	for rest := pairs.Bytes(); len(rest) > 0; {
		n := min(len(rest), maxContent)
		writeRecord(&b, typeParams, rest[:n])
		rest = rest[n:]
	}
	writeRecord(&b, typeParams, nil)
	writeRecord(&b, typeStdin, nil)
	return b.Bytes(), nil
}

// writeLength writes a name or value length: one byte up to 127, else four with the top
// bit set.
func writeLength(b *bytes.Buffer, n int) {
	if n <= 127 {
		b.WriteByte(byte(n))
		return
	}
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(n)|1<<31))
}

// writeRecord writes one record of request 1, its content padded to a multiple of 8 bytes
// as the specification recommends.
func writeRecord(b *bytes.Buffer, typ byte, content []byte) {
	pad := -len(content) & 7
	b.Write([]byte{fcgiVersion, typ, 0, requestID, byte(len(content) >> 8), byte(len(content)), byte(pad), 0})
	b.Write(content)
	b.Write(make([]byte, pad))
}

// readResponse reads records until END_REQUEST; records of other requests are skipped.
func readResponse(r io.Reader) (*fcgiResponse, error) {
	resp := &fcgiResponse{}
	var h [headerLen]byte
	content := make([]byte, maxContent+255)
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("reading the FastCGI answer: %w", err)
		}
		if h[0] != fcgiVersion {
			return nil, fmt.Errorf("reading the FastCGI answer: version %d, want 1 (not a FastCGI server?)", h[0])
		}
		n := int(binary.BigEndian.Uint16(h[4:6]))
		body := content[:n+int(h[6])]
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("reading the FastCGI answer: %w", io.ErrUnexpectedEOF)
		}
		body = body[:n]
		if binary.BigEndian.Uint16(h[2:4]) != requestID {
			continue
		}
		switch h[1] {
		case typeStdout:
			resp.stdout = append(resp.stdout, body...)
		case typeStderr:
			resp.stderr = append(resp.stderr, body...)
		case typeEndRequest:
			if n < 8 {
				return nil, errors.New("reading the FastCGI answer: short END_REQUEST")
			}
			if s := body[4]; s != requestComplete {
				name, ok := protocolStatuses[s]
				if !ok {
					name = "protocol status"
				}
				return nil, fmt.Errorf("the FastCGI server refused the request: %s (%d)", name, s)
			}
			resp.appStatus = binary.BigEndian.Uint32(body[:4])
			return resp, nil
		}
		if len(resp.stdout)+len(resp.stderr) > maxResponse {
			return nil, fmt.Errorf("the FastCGI answer is over %d bytes", maxResponse)
		}
	}
}

// splitCGI splits a responder's STDOUT into its CGI headers and body. The HTTP status is
// that of a Status header, 200 without one.
func splitCGI(out []byte) (status string, body []byte, err error) {
	head, body, ok := bytes.Cut(out, []byte("\r\n\r\n"))
	if !ok {
		if head, body, ok = bytes.Cut(out, []byte("\n\n")); !ok {
			return "", nil, errors.New("the FastCGI answer has no end of headers")
		}
	}
	status = "200 OK"
	for _, line := range strings.Split(string(head), "\n") {
		name, value, _ := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if strings.EqualFold(strings.TrimSpace(name), "Status") {
			status = strings.TrimSpace(value)
		}
	}
	return status, body, nil
}
