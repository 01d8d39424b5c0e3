package testserver_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestPHPFPMServesStatusThroughNginx: both pools' status pages answer through the nginx in
// front of them, text and JSON, and the down upstream is a 502.
func TestPHPFPMServesStatusThroughNginx(t *testing.T) {
	f := testserver.SharedPHPFPM(t)
	get := func(path string) (int, string) {
		resp, err := http.Get(f.Nginx.URL(path))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, pool := range testserver.PHPFPMPools {
		code, body := get("/fpm/" + pool)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "pool:                 "+pool+"\n")
		code, body = get("/fpm/" + pool + "?json")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `{"pool":"`+pool+`",`)
	}
	code, _ := get("/fpm/down")
	require.Equal(t, http.StatusBadGateway, code)
}
