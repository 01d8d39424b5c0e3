package redis

import (
	"fmt"
	"strconv"
	"strings"
)

// kind is the type Telegraf 1.39.3 forces on an INFO field it knows (its redisFieldTypes).
type kind uint8

const (
	kindInt kind = iota + 1
	kindFloat
	kindString
)

// fieldKinds are the INFO fields whose type Telegraf fixes, whatever the server sends:
// allocator_frag_bytes, for one, is an integer on the wire and a float in Telegraf's output.
// Every other field is an integer when it parses as one, else a float, else a string.
var fieldKinds = func() map[string]kind {
	m := map[string]kind{}
	for k, list := range map[kind]string{
		kindInt: `active_defrag_hits active_defrag_key_hits active_defrag_key_misses active_defrag_misses
			active_defrag_running allocator_active allocator_allocated allocator_resident
			allocator_rss_bytes aof_current_rewrite_time_sec aof_enabled aof_last_cow_size
			aof_last_rewrite_time_sec aof_rewrite_in_progress aof_rewrite_scheduled blocked_clients
			client_recent_max_input_buffer client_recent_max_output_buffer clients clients_in_timeout_table
			cluster_enabled connected_slaves evicted_keys expire_cycle_cpu_milliseconds expired_keys
			expired_time_cap_reached_count instantaneous_ops_per_sec io_threaded_reads_processed
			io_threaded_writes_processed keyspace_hits keyspace_misses latest_fork_usec
			lazyfree_pending_objects loading lru_clock master_repl_offset maxmemory mem_aof_buffer
			mem_clients_normal mem_clients_slaves mem_fragmentation_bytes mem_not_counted_for_evict
			mem_replication_backlog migrate_cached_sockets module_fork_in_progress
			module_fork_last_cow_size number_of_cached_scripts pubsub_channels pubsub_patterns
			rdb_bgsave_in_progress rdb_changes_since_last_save rdb_current_bgsave_time_sec
			rdb_last_bgsave_time_sec rdb_last_cow_size rdb_last_save_time rdb_last_save_time_elapsed
			rejected_connections repl_backlog_active repl_backlog_first_byte_offset repl_backlog_histlen
			repl_backlog_size rss_overhead_bytes second_repl_offset slave_expires_tracked_keys sync_full
			sync_partial_err sync_partial_ok total_commands_processed total_connections_received
			total_net_input_bytes total_net_output_bytes total_reads_processed total_system_memory
			total_writes_processed tracking_clients tracking_total_items tracking_total_keys
			tracking_total_prefixes unexpected_error_replies uptime used_memory used_memory_dataset
			used_memory_lua used_memory_overhead used_memory_peak used_memory_rss used_memory_scripts
			used_memory_startup`,
		kindFloat: `allocator_frag_bytes allocator_frag_ratio allocator_rss_ratio expired_stale_perc
			instantaneous_input_kbps instantaneous_output_kbps mem_fragmentation_ratio rss_overhead_ratio
			used_cpu_sys used_cpu_sys_children used_cpu_user used_cpu_user_children
			used_memory_dataset_perc used_memory_peak_perc`,
		kindString: `aof_last_bgrewrite_status aof_last_write_status maxmemory_policy rdb_last_bgsave_status
			redis_version`,
	} {
		for _, name := range strings.Fields(list) {
			m[name] = k
		}
	}
	return m
}()

// parseValue is Telegraf's reading of an INFO value: an integer if it parses as one, else a
// float, else the string.
func parseValue(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

// coerce converts v to k as Telegraf does: floats truncate to integers, integers print with
// %d and floats with %f as strings, and a string that does not parse becomes zero.
func coerce(v any, k kind) any {
	switch x := v.(type) {
	case int64:
		switch k {
		case kindFloat:
			return float64(x)
		case kindString:
			return strconv.FormatInt(x, 10)
		}
	case float64:
		switch k {
		case kindInt:
			return int64(x)
		case kindString:
			return fmt.Sprintf("%f", x)
		}
	case string:
		switch k {
		case kindInt:
			i, _ := strconv.ParseInt(x, 10, 64)
			return i
		case kindFloat:
			f, _ := strconv.ParseFloat(x, 64)
			return f
		}
	}
	return v
}
