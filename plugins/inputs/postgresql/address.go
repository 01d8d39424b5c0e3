package postgresql

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The address as Telegraf's plugins/common/postgresql reads it: a URL or key/value pairs;
// its server tag is the key/value form without password, sslcert, sslkey, sslmode and
// sslrootcert (or outputaddress).

var (
	socketSuffix = regexp.MustCompile(`/\.s\.PGSQL\.\d+$`)
	secretKeys   = regexp.MustCompile(`(\s|^)((?:password|sslcert|sslkey|sslmode|sslrootcert)\s?=\s?(?:(?:'(?:[^'\\]|\\.)*')|(?:\S+)))`)
)

// sanitize is the server tag of addr.
func sanitize(addr string) (string, error) {
	if strings.HasPrefix(addr, "postgres://") || strings.HasPrefix(addr, "postgresql://") {
		var err error
		if addr, err = toKeyValue(addr); err != nil {
			return "", err
		}
	}
	return strings.TrimSpace(secretKeys.ReplaceAllString(addr, "")), nil
}

// quote quotes a key/value value that needs it.
func quote(v string) string {
	if !strings.ContainsAny(v, ` ='\`) {
		return v
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `'`, `\'`) + "'"
}

// toKeyValue turns a postgres:// URL into sorted key/value pairs.
func toKeyValue(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("parsing URI failed: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", fmt.Errorf("invalid connection protocol: %s", u.Scheme)
	}
	var parts []string
	if u.User != nil {
		parts = append(parts, "user="+quote(u.User.Username()))
		if pw, ok := u.User.Password(); ok {
			parts = append(parts, "password="+quote(pw))
		}
	}
	var hosts, ports []string
	anyPort := false
	for h := range strings.SplitSeq(u.Host, ",") {
		if h == "" {
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			if !strings.Contains(err.Error(), "missing port") {
				return "", fmt.Errorf("failed to process host %q: %w", h, err)
			}
			host = h
		}
		anyPort = anyPort || err == nil
		hosts, ports = append(hosts, host), append(ports, port)
	}
	if len(hosts) > 0 {
		parts = append(parts, "host="+strings.Join(hosts, ","))
	}
	if anyPort {
		parts = append(parts, "port="+strings.Join(ports, ","))
	}
	if db := strings.TrimLeft(u.Path, "/"); db != "" {
		parts = append(parts, "dbname="+quote(db))
	}
	for k, v := range u.Query() {
		parts = append(parts, k+"="+quote(strings.Join(v, ",")))
	}
	sort.Strings(parts)
	return strings.Join(parts, " "), nil
}

// connectionDatabase is the database the address connects to, the db tag of
// pg_stat_bgwriter: "postgres" unless it names one.
func connectionDatabase(sanitized string) string {
	cfg, err := pgx.ParseConfig(sanitized)
	if err != nil || cfg.Database == "" {
		return "postgres"
	}
	return cfg.Database
}
