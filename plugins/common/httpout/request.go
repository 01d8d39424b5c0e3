package httpout

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/morse-agent/morse"
)

// NewRequest is http.NewRequestWithContext for a body held in memory, set up as it sets up
// a bytes.Reader (its length, and GetBody for a retry), but with a body that this package's
// connections write in one piece.
//
// net/http copies a body of known length through an io.LimitedReader. A TCP connection's
// own ReadFrom finds no file to send from, so it copies the body through a fresh 32 KiB
// buffer, 32 KiB a write(2): for a batch of a few hundred KB, a dozen system calls, a copy
// and an allocation per request. A connection of NewTransport's writes such a body whole.
func NewRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	if len(body) == 0 {
		req, err := http.NewRequestWithContext(ctx, method, url, http.NoBody)
		if err != nil {
			return nil, err
		}
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return req, nil
	}
	refs := &bodyRefs{}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, refsKey{}, refs), method, url, refs.body(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return refs.body(body), nil }
	return req, nil
}

// memBody is a request body held in memory. refs, when set, learns of its Close (Released).
type memBody struct {
	r    bytes.Reader
	refs *bodyRefs
	once sync.Once
}

func newBody(b []byte) *memBody {
	body := &memBody{}
	body.r.Reset(b)
	return body
}

// Read reads from the body.
func (b *memBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// WriteTo writes what is left of the body to w in one Write.
func (b *memBody) WriteTo(w io.Writer) (int64, error) { return b.r.WriteTo(w) }

// Len is how much of the body is left.
func (b *memBody) Len() int { return b.r.Len() }

// Close tells the request, once, that the transport is done with this body.
func (b *memBody) Close() error {
	if b.refs != nil {
		b.once.Do(b.refs.release)
	}
	return nil
}

// conn is a connection that writes a memBody whole when net/http copies one into it.
type conn struct{ net.Conn }

// ReadFrom writes r to the connection. A memBody under net/http's io.LimitedReader, with no
// more left than the limit, goes in one Write; anything else goes as the connection itself
// would send it.
func (c conn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(*memBody); ok && int64(b.Len()) <= lr.N {
			n, err := b.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// SetHeaders sets the configured headers (Telegraf's http_headers, or headers) on req, over
// any of the same name already set. "Host", in any case, sets the request's Host, which is
// what net/http sends: a Host in the header map would be ignored.
func SetHeaders(req *http.Request, headers map[string]string) {
	for k, v := range headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
}

// Auth is the credentials of a request: an Authorization of Scheme and Token when Token is
// set ("Token" for InfluxDB 2, "Bearer" for most others), else basic auth when Username or
// Password is. The zero value sends none.
type Auth struct {
	Username string
	Password morse.Secret
	Scheme   string
	Token    morse.Secret
}

// Set puts the credentials on req, so that they never appear in a URL.
func (a Auth) Set(req *http.Request) {
	switch {
	case a.Token != "":
		req.Header.Set("Authorization", a.Scheme+" "+string(a.Token))
	case a.Username != "" || a.Password != "":
		req.SetBasicAuth(a.Username, string(a.Password))
	}
}
