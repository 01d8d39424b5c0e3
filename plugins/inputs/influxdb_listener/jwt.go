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
//
// As InfluxDB 1.x does, and Telegraf does not, the token must expire: one without an "exp"
// claim, or with exp 0, is refused with InfluxDB's "token expiration required", since a
// token that never expires stays good for whoever obtains it, for as long as the secret is
// unchanged. token_allow_no_expiration accepts such tokens, as Telegraf does. An expired
// token gets InfluxDB's "Token is expired".
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
	var claims jwt.MapClaims
	if token != nil {
		claims, _ = token.Claims.(jwt.MapClaims)
	}
	switch {
	case errors.Is(err, jwt.ErrTokenExpired) && l.lacksExpiration(claims):
		// exp 0 is in 1970 for the JWT library, and no expiration for InfluxDB.
		return errExpirationRequired
	case errors.Is(err, jwt.ErrTokenExpired):
		return "Token is expired"
	case err != nil:
		return "invalid token: " + err.Error()
	case !token.Valid:
		return "invalid token"
	case claims == nil:
		return "problem authenticating token"
	case l.lacksExpiration(claims):
		return errExpirationRequired
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

// errExpirationRequired is InfluxDB 1.x's answer to a token without an expiration.
const errExpirationRequired = "token expiration required"

// lacksExpiration reports a token that InfluxDB 1.x refuses for having no expiration: no
// numeric "exp" claim, or one not above zero. It is false when token_allow_no_expiration is
// set.
func (l *InfluxDBListener) lacksExpiration(claims jwt.MapClaims) bool {
	if l.TokenAllowNoExpiration {
		return false
	}
	exp, ok := claims["exp"].(float64)
	return !ok || exp <= 0
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
