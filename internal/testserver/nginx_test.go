package testserver_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestNginxServes: the shared nginx answers on both servers, checks credentials and client
// certificates, and logs request bodies.
func TestNginxServes(t *testing.T) {
	n := testserver.SharedNginx(t)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: n.ClientTLS()}}
	get := func(method, url, auth string) (int, string) {
		req, err := http.NewRequest(method, url, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", n.URL("/metrics.influx"), "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, testserver.NginxFiles["metrics.influx"], body)
	code, _ = get("GET", n.HTTPSURL("/mtls"), "")
	require.Equal(t, http.StatusOK, code)
	code, _ = get("GET", n.URL("/auth/bearer/metrics.influx"), "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get("GET", n.URL("/auth/bearer/metrics.influx"), "Bearer "+testserver.NginxBearerToken)
	require.Equal(t, http.StatusOK, code)
	code, _ = get("GET", n.URL("/auth/basic/metrics.influx"), "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get("GET", n.URL("/status/404"), "")
	require.Equal(t, http.StatusNotFound, code)
	code, body = get("POST", n.URL("/oauth/token"), "")
	require.Equal(t, http.StatusUnauthorized, code, body)
}
