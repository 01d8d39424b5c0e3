package redis

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// renamed are the INFO keys that Telegraf reports under another name.
var renamed = map[string]string{
	"uptime_in_seconds": "uptime",
	"connected_clients": "clients",
	"role":              "replication_role",
}

// gatherInfo turns the answer to INFO ALL into Telegraf's measurements: redis (one metric of
// the scalar values), redis_keyspace, redis_cmdstat, redis_latency_percentiles_usec,
// redis_replication and redis_errorstat. base are the server's tags.
func gatherInfo(info string, now time.Time, acc morse.Accumulator, base map[string]string) {
	var section string
	var hits, misses int64
	tags := maps.Clone(base)
	fields := make(map[string]any, 160)
	for line := range strings.Lines(info) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			continue
		}
		if line[0] == '#' {
			if len(line) > 2 {
				section = line[2:]
			}
			continue
		}
		name, raw, ok := strings.Cut(line, ":")
		if !ok || skipped(section, name) {
			continue
		}
		raw = strings.TrimSpace(raw)
		metric, known := renamed[name]
		if !known {
			if gatherSpecial(section, name, raw, acc, base) {
				continue
			}
			metric = name
		}
		v := parseValue(strings.TrimSuffix(raw, "%"))
		switch x := v.(type) {
		case int64:
			switch name {
			case "keyspace_hits":
				hits = x
			case "keyspace_misses":
				misses = x
			case "rdb_last_save_time":
				fields["rdb_last_save_time_elapsed"] = now.Unix() - x
			}
		case string:
			if name == "role" {
				tags["replication_role"] = x
				continue
			}
		}
		fields[metric] = v
	}
	rate := 0.0
	if hits != 0 || misses != 0 {
		rate = float64(hits) / float64(hits+misses)
	}
	fields["keyspace_hitrate"] = rate
	for k, v := range fields {
		if kd, ok := fieldKinds[k]; ok {
			fields[k] = coerce(v, kd)
		}
	}
	acc.AddFields("redis", fields, tags, now)
}

// skipped are the keys Telegraf leaves out: the Server section but for three keys, the
// replication ids, the allocator's name and the human-readable duplicates.
func skipped(section, name string) bool {
	if section == "Server" && name != "lru_clock" && name != "uptime_in_seconds" && name != "redis_version" {
		return true
	}
	return strings.HasPrefix(name, "master_replid") || name == "mem_allocator" || strings.HasSuffix(name, "_human")
}

// gatherSpecial adds the metric of a line that has a measurement of its own and reports
// whether it did.
func gatherSpecial(section, name, raw string, acc morse.Accumulator, base map[string]string) bool {
	switch {
	case section == "Keyspace":
		gatherPairs(acc, "redis_keyspace", raw, base, map[string]string{"database": name}, nil)
	case section == "Commandstats":
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok || strings.HasPrefix(name, "cmdstat") {
			gatherPairs(acc, "redis_cmdstat", raw, base, map[string]string{"command": cmd}, cmdstatKinds)
		}
	case section == "Latencystats":
		if cmd, ok := strings.CutPrefix(name, "latency_percentiles_usec_"); ok || strings.HasPrefix(name, "latency_percentiles_usec") {
			gatherPairs(acc, "redis_latency_percentiles_usec", raw, base, map[string]string{"command": cmd}, latencyKinds)
		}
	case section == "Replication" && isReplica(name):
		gatherReplica(acc, name, raw, base)
	case section == "Errorstats":
		gatherErrorstat(acc, name, raw, base)
	default:
		return false
	}
	return true
}

var (
	cmdstatKinds = map[string]kind{"calls": kindInt, "usec": kindInt, "rejected_calls": kindInt,
		"failed_calls": kindInt, "usec_per_call": kindFloat}
	latencyKinds = map[string]kind{"p50": kindFloat, "p99": kindFloat, "p99.9": kindFloat}
)

// isReplica matches Telegraf's ^slave\d+.
func isReplica(name string) bool {
	rest, ok := strings.CutPrefix(name, "slave")
	return ok && rest != "" && rest[0] >= '0' && rest[0] <= '9'
}

// gatherPairs adds a metric of a k=v,k=v line: with kinds, only the keys it names, of its
// kind; without, every key whose value is an integer (the keyspace lines). A keyspace line
// without keys= is no database.
func gatherPairs(acc morse.Accumulator, measurement, raw string, base, extra map[string]string, kinds map[string]kind) {
	if kinds == nil && !strings.Contains(raw, "keys=") {
		return
	}
	fields := make(map[string]any, 4)
	for part := range strings.SplitSeq(raw, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.Contains(v, "=") {
			continue
		}
		kd := kindInt
		if kinds != nil {
			if kd, ok = kinds[k]; !ok {
				continue
			}
		}
		if kd == kindFloat {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				fields[k] = f
			}
		} else if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			fields[k] = i
		}
	}
	tags := maps.Clone(base)
	maps.Copy(tags, extra)
	acc.AddFields(measurement, fields, tags)
}

// gatherReplica adds redis_replication of a "slaveN:ip=...,port=...,state=...,offset=...,lag=..."
// line of a primary.
func gatherReplica(acc morse.Accumulator, name, raw string, base map[string]string) {
	tags := maps.Clone(base)
	tags["replica_id"] = strings.TrimLeft(name, "slave")
	tags["replication_role"] = "slave"
	fields := map[string]any{}
	for part := range strings.SplitSeq(raw, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.Contains(v, "=") {
			continue
		}
		switch k {
		case "ip":
			tags["replica_ip"] = v
		case "port":
			tags["replica_port"] = v
		case "state":
			tags["state"] = v
		default:
			if i, err := strconv.ParseInt(v, 10, 64); err == nil {
				fields[k] = i
			}
		}
	}
	acc.AddFields("redis_replication", fields, tags)
}

// gatherErrorstat adds redis_errorstat of an "errorstat_ERR:count=N" line.
func gatherErrorstat(acc morse.Accumulator, name, raw string, base map[string]string) {
	parts := strings.Split(raw, "=")
	if len(parts) < 2 {
		acc.AddError(fmt.Errorf("invalid line for %q: %s", name, raw))
		return
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		acc.AddError(fmt.Errorf("parsing value in line %q failed: %w", raw, err))
		return
	}
	tags := maps.Clone(base)
	tags["err"] = strings.TrimPrefix(name, "errorstat_")
	acc.AddFields("redis_errorstat", map[string]any{"total": n}, tags)
}
