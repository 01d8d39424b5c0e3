package mysql

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The conversions of Telegraf 1.39.3's metric_version 2 (its plugins/inputs/mysql/v2): a
// value is an integer, an unsigned integer, a float or a string as it parses, YES and ON
// are 1, NO and OFF are 0, and a few keys have a conversion of their own.

type conversion func(b []byte) (any, error)

func parseInt(b []byte) (any, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return v, nil // the nearest bound, as Telegraf keeps it
	}
	return v, err
}

func parseUint(b []byte) (any, error)   { return strconv.ParseUint(string(b), 10, 64) }
func parseFloat(b []byte) (any, error)  { return strconv.ParseFloat(string(b), 64) }
func parseString(b []byte) (any, error) { return string(b), nil }

func parseBoolAsInteger(b []byte) (any, error) {
	if bytes.EqualFold(b, []byte("YES")) || bytes.EqualFold(b, []byte("ON")) {
		return int64(1), nil
	}
	return int64(0), nil
}

func parseGTIDMode(b []byte) (any, error) {
	switch string(b) {
	case "OFF", "OFF_PERMISSIVE":
		return int64(0), nil
	case "ON", "ON_PERMISSIVE":
		return int64(1), nil
	}
	return nil, fmt.Errorf("unrecognized gtid_mode: %q", b)
}

// parseValue is the default conversion.
func parseValue(b []byte) (any, error) {
	switch {
	case bytes.EqualFold(b, []byte("YES")) || bytes.Equal(b, []byte("ON")):
		return int64(1), nil
	case bytes.EqualFold(b, []byte("NO")) || bytes.Equal(b, []byte("OFF")):
		return int64(0), nil
	}
	s := string(b)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		return v, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, nil
	}
	if s != "" {
		return s, nil
	}
	return nil, fmt.Errorf("unconvertible value: %q", s)
}

// parseWsrepLatency splits min/avg/max/stdev/sample_size into five floats.
func parseWsrepLatency(b []byte) (any, error) {
	keys := []string{"min", "avg", "max", "stdev", "sample_size"}
	parts := strings.Split(string(b), "/")
	if len(parts) != len(keys) {
		return nil, fmt.Errorf("unsupported amount of values in wsrep_evs_repl_latency, got %d expected %d", len(parts), len(keys))
	}
	out := make(map[string]any, len(keys))
	for i, k := range keys {
		v, err := strconv.ParseFloat(parts[i], 64)
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s value: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// parseWsrepProviderOptions keeps gcache.size of the provider's options, in bytes.
func parseWsrepProviderOptions(b []byte) (any, error) {
	out := map[string]any{}
	for setting := range strings.SplitSeq(strings.TrimSpace(string(b)), ";") {
		key, data, found := strings.Cut(setting, "=")
		if setting != "" && !found {
			return nil, fmt.Errorf("invalid key-value pair for %q", setting)
		}
		key, data = strings.TrimSpace(key), strings.TrimSpace(data)
		if data == "" || key != "gcache.size" {
			continue
		}
		factor := uint64(1)
		num := data[:len(data)-1]
		switch strings.ToUpper(data[len(data)-1:]) {
		case "K":
			factor = 1 << 10
		case "M":
			factor = 1 << 20
		case "G":
			factor = 1 << 30
		case "T":
			factor = 1 << 40
		case "P":
			factor = 1 << 50
		case "E":
			factor = 1 << 60
		default:
			num = data
		}
		v, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("failed to parse value %q: %w", data, err)
		}
		out["gcache_size"] = v * factor
	}
	return out, nil
}

var statusConversions = map[string]conversion{
	"innodb_available_undo_logs": parseUint, "innodb_buffer_pool_pages_misc": parseUint,
	"innodb_data_pending_fsyncs": parseUint, "ssl_ctx_verify_depth": parseUint, "ssl_verify_depth": parseUint,
	"wsrep_apply_oooe": parseFloat, "wsrep_apply_oool": parseFloat, "wsrep_apply_window": parseFloat,
	"wsrep_cert_deps_distance": parseFloat, "wsrep_cert_interval": parseFloat, "wsrep_commit_oooe": parseFloat,
	"wsrep_commit_oool": parseFloat, "wsrep_commit_window": parseFloat, "wsrep_evs_repl_latency": parseWsrepLatency,
	"wsrep_flow_control_paused": parseFloat, "wsrep_local_index": parseUint,
	"wsrep_local_recv_queue_avg": parseFloat, "wsrep_local_send_queue_avg": parseFloat,
}

var variableConversions = map[string]conversion{
	"delay_key_write": parseString, "enforce_gtid_consistency": parseString, "event_scheduler": parseString,
	"have_openssl": parseBoolAsInteger, "have_ssl": parseBoolAsInteger, "have_symlink": parseBoolAsInteger,
	"session_track_gtids": parseString, "session_track_transaction_info": parseString,
	"ssl_fips_mode": parseString, "use_secondary_engine": parseString,
	"transaction_write_set_extraction": parseString, "slave_skip_errors": parseString,
	"gtid_mode": parseGTIDMode, "wsrep_provider_options": parseWsrepProviderOptions,
}

// convert converts the value of key with table's conversion or parseValue; an empty value
// is no field (nil, nil).
func convert(table map[string]conversion, key string, b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if c, ok := table[key]; ok {
		return c(b)
	}
	return parseValue(b)
}

// addValue puts v into fields under key, or each entry of a map under key_entry.
func addValue(fields map[string]any, key string, v any) {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			fields[key+"_"+k] = e
		}
	default:
		fields[key] = v
	}
}

// byTypeName converts a column's value by its database type, as Telegraf's
// parseValueByDatabaseTypeName does for replication status and InnoDB metrics.
func byTypeName(b []byte, typeName string) (any, error) {
	switch typeName {
	case "INT":
		return parseInt(b)
	case "BIGINT":
		return parseUint(b)
	case "VARCHAR":
		return parseString(b)
	}
	return parseValue(b)
}
