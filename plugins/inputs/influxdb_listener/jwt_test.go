package influxdblistener

import (
	"net/http"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

func signed(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return tok
}

// TestJWTAuth runs Telegraf's token authentication against a real listener: a token signed
// with the shared secret whose username claim matches is let in, through Telegraf's
// "Authentication" header or InfluxDB's "Authorization"; every other request gets 401 and
// is counted.
func TestJWTAuth(t *testing.T) {
	secret := []byte("shared-secret")
	l := newListener(t, func(l *InfluxDBListener) { l.TokenSharedSecret, l.TokenUsername = "shared-secret", "telegraf" })
	acc, st := start(t, l)
	c := newClient(t, l.Addr(), nil)
	exp := time.Now().Add(time.Hour).Unix()
	good := signed(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"username": "telegraf", "exp": exp})
	tests := []struct {
		name, header, value string
		status              int
		msg                 string
	}{
		{"Telegraf's header", "Authentication", "Bearer " + good, http.StatusNoContent, ""},
		{"InfluxDB's header", "Authorization", "Bearer " + good, http.StatusNoContent, ""},
		{"no token", "X-None", "", http.StatusUnauthorized, "authorization failed: a bearer token is required"},
		{"basic credentials are not a token", "Authorization", "Token telegraf:pw", http.StatusUnauthorized, "a bearer token is required"},
		{"another user", "Authentication", "Bearer " + signed(t, jwt.SigningMethodHS512, secret, jwt.MapClaims{"username": "mallory", "exp": exp}),
			http.StatusUnauthorized, "authorization failed"},
		{"no username", "Authentication", "Bearer " + signed(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "telegraf", "exp": exp}),
			http.StatusUnauthorized, "token must contain a string username"},
		{"another secret", "Authentication", "Bearer " + signed(t, jwt.SigningMethodHS256, []byte("guess"), jwt.MapClaims{"username": "telegraf"}),
			http.StatusUnauthorized, "invalid token: token signature is invalid"},
		{"expired", "Authentication", "Bearer " + signed(t, jwt.SigningMethodHS256, secret,
			jwt.MapClaims{"username": "telegraf", "exp": time.Now().Add(-time.Minute).Unix()}), http.StatusUnauthorized, errorBody("Token is expired")},
		{"no expiration", "Authorization", "Bearer " + signed(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"username": "telegraf"}),
			http.StatusUnauthorized, errorBody("token expiration required")},
		{"expiration 0", "Authorization", "Bearer " + signed(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"username": "telegraf", "exp": 0}),
			http.StatusUnauthorized, errorBody("token expiration required")},
		{"unsigned", "Authentication", "Bearer " + signed(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"username": "telegraf"}),
			http.StatusUnauthorized, "invalid token"},
	}
	failures := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := c.must("POST", "/write?db=x", []byte("m v=1\n"), tt.header, tt.value)
			require.Equal(t, tt.status, a.status, a.body)
			if tt.status == http.StatusUnauthorized {
				failures++
				require.Contains(t, a.body, tt.msg)
			}
		})
	}
	require.Equal(t, 2, acc.NMetrics(), "only the two good requests were written")
	require.Equal(t, int64(failures), st.Counter("authentication_failures").Get())
	require.Equal(t, http.StatusNoContent, c.must("GET", "/ping", nil).status, "ping needs no token")
}

// TestJWTWithoutExpirationAllowedByOption: token_allow_no_expiration lets in a token with
// no "exp" claim, as Telegraf does, and still refuses an expired one.
func TestJWTWithoutExpirationAllowedByOption(t *testing.T) {
	secret := []byte("shared-secret")
	l := newListener(t, func(l *InfluxDBListener) {
		l.TokenSharedSecret, l.TokenUsername, l.TokenAllowNoExpiration = "shared-secret", "telegraf", true
	})
	acc, _ := start(t, l)
	c := newClient(t, l.Addr(), nil)
	forever := signed(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"username": "telegraf"})
	a := c.must("POST", "/write?db=x", []byte("m v=1\n"), "Authorization", "Bearer "+forever)
	require.Equal(t, http.StatusNoContent, a.status, a.body)
	expired := signed(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"username": "telegraf", "exp": time.Now().Add(-time.Minute).Unix()})
	a = c.must("POST", "/write?db=x", []byte("m v=2\n"), "Authorization", "Bearer "+expired)
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, errorBody("Token is expired"), a.body)
	require.Equal(t, 1, acc.NMetrics())

	require.False(t, New().TokenAllowNoExpiration, "tokens must expire by default")
	fromConfig := New()
	_, err := toml.Decode("token_allow_no_expiration = true", fromConfig)
	require.NoError(t, err)
	require.True(t, fromConfig.TokenAllowNoExpiration)
}

func TestZeroMeansTelegrafsDefault(t *testing.T) {
	l := New()
	_, err := toml.Decode("max_body_size = 0\nread_timeout = \"0s\"\nwrite_timeout = \"0s\"\nmax_line_size = 0\nbackpressure_max_wait = \"0s\"\n", l)
	require.NoError(t, err)
	l.SetLogger(testutil.QuietLogger())
	require.NoError(t, l.Init())
	require.Equal(t, defaultMaxBodySize, l.MaxBodySize, "0 means 32MiB, as in Telegraf")
	require.Equal(t, defaultTimeout, l.ReadTimeout)
	require.Equal(t, defaultTimeout, l.WriteTimeout)
	require.Equal(t, defaultMaxLineSize, l.MaxLineSize, "morse's own: 0 means 1MiB")
	require.Equal(t, defaultMaxWait, l.BackpressureMaxWait, "morse's own: 0 means 4s")
	require.True(t, l.Backpressure, "on by default")
}

func TestParserTypeWarnsOnce(t *testing.T) {
	for _, v := range []string{"internal", "upstream"} {
		l := New()
		l.ServiceAddress = "127.0.0.1:0"
		l.ParserType = v
		var logs testutil.Logs
		l.SetLogger(logs.Logger())
		require.NoError(t, l.Init())
		require.Equal(t, []string{"parser_type has no effect in morse: it has one line protocol parser for what either of Telegraf's parsers reads"},
			logs.Warnings())
		_, _ = start(t, l)
		newClient(t, l.Addr(), nil).healthy()
		require.Len(t, logs.Warnings(), 1)
	}
}
