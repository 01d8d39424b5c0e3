package influxdblistener

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestJWTAnswersAsInfluxDB sends the same bearer tokens to a real InfluxDB 1.x, with
// auth-enabled and a shared secret, and to the listener, and requires the same status and
// body from both: a token without an expiration, with exp 0, expired, and good.
func TestJWTAnswersAsInfluxDB(t *testing.T) {
	const secret, user = "shared-secret", "telegraf"
	influx := testserver.StartInfluxDB(t, testserver.InfluxOptions{Env: map[string]string{
		"INFLUXDB_HTTP_AUTH_ENABLED":  "true",
		"INFLUXDB_HTTP_SHARED_SECRET": secret,
	}})
	// With auth enabled and no user, InfluxDB takes only the statement that creates the
	// admin; the database is then created as that admin.
	influx.Exec(t, "CREATE USER "+user+" WITH PASSWORD 'pw' WITH ALL PRIVILEGES")
	resp, err := http.PostForm(influx.URL()+"/query?"+url.Values{"u": {user}, "p": {"pw"}}.Encode(),
		url.Values{"q": {"CREATE DATABASE x"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	l := newListener(t, func(l *InfluxDBListener) { l.TokenSharedSecret, l.TokenUsername = secret, user })
	acc, _ := start(t, l)

	post := func(base, token string) answer {
		req, err := http.NewRequest(http.MethodPost, base+"/write?db=x", bytes.NewReader([]byte("jwt v=1\n")))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Timeout: waitFor}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		claims jwt.MapClaims
		status int
	}{
		{"no expiration", jwt.MapClaims{"username": user}, http.StatusUnauthorized},
		{"expiration 0", jwt.MapClaims{"username": user, "exp": 0}, http.StatusUnauthorized},
		{"expired", jwt.MapClaims{"username": user, "exp": now.Add(-time.Minute).Unix()}, http.StatusUnauthorized},
		{"good", jwt.MapClaims{"username": user, "exp": now.Add(time.Hour).Unix()}, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := signed(t, jwt.SigningMethodHS256, []byte(secret), tc.claims)
			want := post(influx.URL(), token)
			got := post("http://"+l.Addr().String(), token)
			require.Equal(t, tc.status, want.status, "InfluxDB: %s", want.body)
			require.Equal(t, want.status, got.status, got.body)
			require.Equal(t, want.body, got.body)
			require.Equal(t, want.header.Get("WWW-Authenticate"), got.header.Get("WWW-Authenticate"))
		})
	}
	require.Equal(t, 1, acc.NMetrics(), "only the good token's write")
}
