package influxdb

import (
	"strconv"
	"strings"
)

// limitExceeded starts InfluxDB 1.x's reason for a point it refused because a tag key has
// max-values-per-tag values already. The whole reason reads
//
//	max-values-per-tag limit exceeded (100/100): measurement="m" tag="id" value="x"
//
// with Go-quoted strings, inside "partial write: ... dropped=N" when other points of the
// write were stored. InfluxDB names only one refused point per write.
const limitExceeded = "max-values-per-tag limit exceeded"

// TagLimitGuard returns the cardinality_guard option: the alias of the processor to tell
// when the server refuses a point for max-values-per-tag. It makes the output a
// morse.TagLimitReporter.
func (o *InfluxDB) TagLimitGuard() string { return o.CardinalityGuard }

// SetTagLimitGuard is how the engine hands over the guard that cardinality_guard names.
func (o *InfluxDB) SetTagLimitGuard(trip func(measurement, key string)) { o.trip.Store(&trip) }

// reportTagLimit tells the guard, if there is one, which key a refusal named. The message
// names one point per write, so a burst of new values trips its key at the first refusal,
// and the guard converts the key's next metrics before they reach the server.
func (o *InfluxDB) reportTagLimit(msg string) {
	trip := o.trip.Load()
	if trip == nil {
		return
	}
	if measurement, key, ok := parseLimitExceeded(msg); ok {
		(*trip)(measurement, key)
	}
}

// parseLimitExceeded finds the measurement and tag key that InfluxDB names in an error
// message that reports max-values-per-tag limit exceeded. It reports false for any other
// message.
func parseLimitExceeded(msg string) (measurement, key string, ok bool) {
	i := strings.Index(msg, limitExceeded)
	if i < 0 {
		return "", "", false
	}
	rest := msg[i+len(limitExceeded):]
	measurement, rest, ok = quotedAfter(rest, "measurement=")
	if !ok {
		return "", "", false
	}
	key, _, ok = quotedAfter(rest, " tag=")
	return measurement, key, ok
}

// quotedAfter unquotes the Go string that follows the first label in s, and returns what
// follows it.
func quotedAfter(s, label string) (value, rest string, ok bool) {
	i := strings.Index(s, label)
	if i < 0 {
		return "", "", false
	}
	s = s[i+len(label):]
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", false
	}
	value, err = strconv.Unquote(q)
	return value, s[len(q):], err == nil
}
