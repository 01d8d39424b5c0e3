package influxdblistener

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/morse-agent/morse"
)

// checkJWT checks the request's JSON Web Token the way Telegraf's token_shared_secret does:
// a bearer token, signed with HMAC and the shared secret, not expired, whose "username"
// claim is token_username. Telegraf reads it from the "Authentication" header; InfluxDB 1.x
// clients send it in "Authorization", so both are read. It returns the message of a refusal,
// or "" when the token is good.
func (l *InfluxDBListener) checkJWT(r *http.Request) string {
	bearer, ok := bearerToken(r.Header.Get("Authentication"))
	if !ok {
		bearer, ok = bearerToken(r.Header.Get("Authorization"))
	}
	if !ok {
		return "authorization failed: a bearer token is required"
	}
	token, err := jwt.Parse(bearer, func(t *jwt.Token) (any, error) {
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok {
			return nil, fmt.Errorf("unexpected signing method: %v", t.Header["alg"])
		}
		return []byte(l.TokenSharedSecret), nil
	})
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case err != nil:
		return "invalid token: " + err.Error()
	case !token.Valid:
		return "invalid token"
	}
	claims, ok := token.Claims.(jwt.MapClaims)
	if !ok {
		return "problem authenticating token"
	}
	user, ok := claims["username"].(string)
	if !ok || user == "" {
		return "token must contain a string username"
	}
	if !morse.SecretEqual(l.TokenUsername, user) {
		return "authorization failed"
	}
	return ""
}

// bearerToken takes the token out of a "Bearer <token>" header value.
func bearerToken(header string) (string, bool) {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	return tok, ok && tok != ""
}

// validateTokens checks token_shared_secret and token_username as Telegraf's Init does.
func (l *InfluxDBListener) validateTokens() []error {
	var errs []error
	jwtSet := l.TokenSharedSecret.IsSet() || l.TokenUsername != ""
	if jwtSet && (l.BasicUsername != "" || l.BasicPassword.IsSet()) {
		errs = append(errs, morse.Errorf("token_shared_secret", "cannot use basic-auth and tokens at the same time"))
	}
	if l.TokenSharedSecret.IsSet() != (l.TokenUsername != "") {
		errs = append(errs, morse.Errorf("token_shared_secret", "neither 'token_shared_secret' nor 'token_username' can be empty for token authentication"))
	}
	switch l.ParserType {
	case "", "internal", "upstream":
	default:
		errs = append(errs, morse.Errorf("parser_type", "%q is not a parser; use \"internal\" or \"upstream\"", l.ParserType))
	}
	return errs
}
