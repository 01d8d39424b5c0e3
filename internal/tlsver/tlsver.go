// Package tlsver reads Telegraf's tls_min_version, which a listener's server options
// (plugins/common/tlsserver) and an output's client options (plugins/common/tlsclient)
// spell alike.
package tlsver

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// Min reads tls_min_version: "TLS12" (also the default, for "") or "TLS13", with or
// without a dot. Versions below 1.2 are refused rather than accepted, because they have
// known weaknesses and no peer that still needs them should be trusted with metrics by
// default.
func Min(s string) (uint16, error) {
	switch strings.ToUpper(strings.ReplaceAll(s, ".", "")) {
	case "", "TLS12":
		return tls.VersionTLS12, nil
	case "TLS13":
		return tls.VersionTLS13, nil
	case "TLS10", "TLS11":
		return 0, fmt.Errorf("%q is too old: morse accepts TLS 1.2 or later (\"TLS12\" or \"TLS13\")", s)
	}
	return 0, fmt.Errorf("unknown version %q: use \"TLS12\" or \"TLS13\"", s)
}
