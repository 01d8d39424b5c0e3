package morse

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
)

// Secret is a password or token from a config file. It prints, logs and marshals as
// "<redacted>", so that neither a log line nor a config dump shows it; only Matches reads it.
type Secret string

const redacted = "<redacted>"

// String hides the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString hides the value from %#v.
func (s Secret) GoString() string { return s.String() }

// LogValue hides the value from slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText hides the value from config dumps (TOML, JSON).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the value from a config file.
func (s *Secret) UnmarshalText(b []byte) error {
	*s = Secret(b)
	return nil
}

// IsSet reports whether the secret holds a value.
func (s Secret) IsSet() bool { return s != "" }

// Matches compares given with the secret in constant time. Both are hashed first, so that
// neither the comparison's time nor its length check tells an attacker how long the secret is
// or how many of its leading bytes were right. An unset secret matches nothing.
func (s Secret) Matches(given string) bool {
	return s != "" && SecretEqual(string(s), given)
}

// SecretEqual compares two strings in time that depends on neither their contents nor their
// lengths, for user names and passwords alike.
func SecretEqual(want, given string) bool {
	w := sha256.Sum256([]byte(want))
	g := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(w[:], g[:]) == 1
}
