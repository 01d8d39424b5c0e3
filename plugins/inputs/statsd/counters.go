package statsd

import "github.com/morse-agent/morse/selfstat"

// Reasons a line is refused, each counted as parse_errors_<reason> besides parse_errors.
const (
	reasonNoColon      = "missing_colon"    // no ':' between bucket and value
	reasonNoType       = "missing_type"     // no '|' between value and type
	reasonBadType      = "unknown_type"     // a type other than g, c, s, ms, h, d
	reasonBadValue     = "bad_value"        // a value that is not a number
	reasonSign         = "sign_not_allowed" // a +/- value on a set, timing or histogram
	reasonEvent        = "bad_event"        // a DogStatsD event that does not parse
	reasonServiceCheck = "bad_service_check"
	reasonTooLong      = "line_too_long" // a TCP line longer than 64 KiB
)

var reasons = []string{reasonNoColon, reasonNoType, reasonBadType, reasonBadValue, reasonSign,
	reasonEvent, reasonServiceCheck, reasonTooLong}

// counters are the plugin's self-metrics, reported as internal_statsd. The first eleven
// are Telegraf's; the others count what Telegraf logs or loses without counting.
type counters struct {
	maxConns, curConns, totalConns *selfstat.Counter
	tcpPackets, tcpBytes           *selfstat.Counter
	udpPackets, udpDropped         *selfstat.Counter
	udpBytes, parseTime            *selfstat.Counter
	pending, maxPending            *selfstat.Counter

	refused, evicted, readErrors *selfstat.Counter
	parseErrors                  *selfstat.Counter
	byReason                     map[string]*selfstat.Counter
	distIgnored                  *selfstat.Counter
}

func newCounters(st *selfstat.PluginStats) counters {
	c := st.Counter
	cs := counters{
		maxConns: c("tcp_max_connections"), curConns: c("tcp_current_connections"),
		totalConns: c("tcp_total_connections"), tcpPackets: c("tcp_packets_received"),
		tcpBytes: c("tcp_bytes_received"), udpPackets: c("udp_packets_received"),
		udpDropped: c("udp_packets_dropped"), udpBytes: c("udp_bytes_received"),
		parseTime: c("parse_time_ns"), pending: c("pending_messages"), maxPending: c("max_pending_messages"),
		refused: c("tcp_connections_refused"), evicted: c("tcp_connections_evicted"),
		readErrors: c("read_errors"), parseErrors: c("parse_errors"),
		distIgnored: c("distributions_ignored"),
		byReason:    make(map[string]*selfstat.Counter, len(reasons)),
	}
	for _, r := range reasons {
		cs.byReason[r] = c("parse_errors_" + r)
	}
	return cs
}
