package prometheusclient

import (
	"strings"

	promser "github.com/morse-agent/morse/plugins/serializers/prometheus"
)

// Names are sanitized by the prometheus serializer's rules, Telegraf's (see
// serializers/prometheus.SanitizeMetricName), so that the serializer and this output agree.

// namer caches the sanitized names of the fields and tags it has seen, so that a write of
// names already seen allocates nothing. It is used under the store's lock.
type namer struct {
	utf8    bool
	metrics map[string]string // "" for a name that sanitizes to nothing
	labels  map[string]string
}

func newNamer(utf8Names bool) *namer {
	return &namer{utf8: utf8Names, metrics: map[string]string{}, labels: map[string]string{}}
}

// metric returns the sanitized metric name of name.
func (n *namer) metric(name string) (string, bool) { return n.get(n.metrics, name, true) }

// label returns the sanitized label name of name.
func (n *namer) label(name string) (string, bool) { return n.get(n.labels, name, false) }

func (n *namer) get(m map[string]string, name string, colon bool) (string, bool) {
	if s, ok := m[name]; ok {
		return s, s != ""
	}
	sanitize := promser.SanitizeLabelName
	if colon {
		sanitize = promser.SanitizeMetricName
	}
	s, ok := sanitize(name, n.utf8)
	if !ok {
		s = ""
	}
	if len(m) < maxNames {
		m[strings.Clone(name)] = s
	}
	return s, ok
}

// maxNames bounds each cache of the namer: past it, names are sanitized afresh each time,
// so that a field key that never repeats cannot grow it.
const maxNames = 1 << 16
