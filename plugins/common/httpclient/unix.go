package httpclient

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Telegraf's common HTTP client (through peterbourgon/unixtransport) reads URLs such as
// http+unix:///var/run/nginx.sock:/server_status: the socket's path, a colon, then the
// request's path. registerUnix teaches tr these schemes, http+unix and https+unix.
//
// A request is rewritten to http (or https) with the socket's path hex-encoded as its host,
// so that the transport pools connections per socket, and the dialer decodes it back; the
// Host header is "localhost", as unixtransport sends.
func registerUnix(tr *http.Transport) {
	ut := tr.Clone()
	var d net.Dialer
	ut.Proxy = nil
	ut.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		sock, err := hex.DecodeString(strings.TrimSuffix(host, ".sock"))
		if err != nil {
			return nil, fmt.Errorf("unix socket address %q: %w", addr, err)
		}
		return d.DialContext(ctx, "unix", string(sock))
	}
	if ut.TLSClientConfig != nil && ut.TLSClientConfig.ServerName == "" {
		ut.TLSClientConfig = ut.TLSClientConfig.Clone()
		ut.TLSClientConfig.ServerName = "localhost"
	}
	rt := unixRoundTripper{ut}
	tr.RegisterProtocol("http+unix", rt)
	tr.RegisterProtocol("https+unix", rt)
}

type unixRoundTripper struct{ tr *http.Transport }

// errUnixURL is the answer to a +unix URL without the colon between socket and path.
var errUnixURL = errors.New("a +unix URL is SCHEME://SOCKET:PATH, e.g. http+unix:///run/nginx.sock:/status")

func (u unixRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	sock, path, ok := strings.Cut(req.URL.Path, ":")
	if !ok || sock == "" {
		return nil, errUnixURL
	}
	if req.URL.Host != "" { // http+unix://relative.sock:/status
		sock = req.URL.Host + sock
	}
	r := req.Clone(req.Context())
	r.URL.Scheme = strings.TrimSuffix(req.URL.Scheme, "+unix")
	r.URL.Host = hex.EncodeToString([]byte(sock)) + ".sock"
	r.URL.Path, r.URL.RawPath = path, ""
	if !strings.HasPrefix(r.URL.Path, "/") {
		r.URL.Path = "/" + r.URL.Path
	}
	r.Host = "localhost"
	return u.tr.RoundTrip(r)
}
