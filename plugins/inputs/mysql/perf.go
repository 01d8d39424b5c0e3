package mysql

import (
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
)

// picoseconds per second: the performance schema's timers count picoseconds.
const picoseconds = 1e12

// scanFloats runs query and calls row with each row's leading string columns and the rest
// as floats, as Telegraf scans the performance schema's counters.
func (g *gatherer) scanFloats(query string, nStrings int, row func(s []string, f []float64), args ...any) error {
	rows, err := g.db.QueryContext(g.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	s := make([]string, nStrings)
	f := make([]float64, len(cols)-nStrings)
	dest := make([]any, len(cols))
	for i := range s {
		dest[i] = &s[i]
	}
	for i := range f {
		dest[nStrings+i] = &f[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		row(s, f)
	}
	return rows.Err()
}

// named makes fields of names and values, dividing the timers (names with "seconds") into
// seconds.
func named(names []string, vals []float64) map[string]any {
	fields := make(map[string]any, len(names))
	for i, n := range names {
		v := vals[i]
		if strings.Contains(n, "seconds") {
			v /= picoseconds
		}
		fields[n] = v
	}
	return fields
}

func (g *gatherer) tableIOWaits() error {
	names := []string{"table_io_waits_total_fetch", "table_io_waits_total_insert", "table_io_waits_total_update",
		"table_io_waits_total_delete", "table_io_waits_seconds_total_fetch", "table_io_waits_seconds_total_insert",
		"table_io_waits_seconds_total_update", "table_io_waits_seconds_total_delete"}
	return g.scanFloats(`SELECT OBJECT_SCHEMA, OBJECT_NAME, COUNT_FETCH, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE,
		SUM_TIMER_FETCH, SUM_TIMER_INSERT, SUM_TIMER_UPDATE, SUM_TIMER_DELETE
		FROM performance_schema.table_io_waits_summary_by_table WHERE OBJECT_SCHEMA NOT IN ('mysql', 'performance_schema')`,
		2, func(s []string, f []float64) {
			g.acc.AddFields("mysql_perf_schema", named(names, f), g.tags("schema", s[0], "name", s[1]))
		})
}

func (g *gatherer) indexIOWaits() error {
	names := []string{"index_io_waits_total_fetch", "index_io_waits_total_insert", "index_io_waits_total_update",
		"index_io_waits_total_delete", "index_io_waits_seconds_total_fetch", "index_io_waits_seconds_total_insert",
		"index_io_waits_seconds_total_update", "index_io_waits_seconds_total_delete"}
	return g.scanFloats(`SELECT OBJECT_SCHEMA, OBJECT_NAME, ifnull(INDEX_NAME, 'NONE') as INDEX_NAME,
		COUNT_FETCH, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE, SUM_TIMER_FETCH, SUM_TIMER_INSERT, SUM_TIMER_UPDATE, SUM_TIMER_DELETE
		FROM performance_schema.table_io_waits_summary_by_index_usage WHERE OBJECT_SCHEMA NOT IN ('mysql', 'performance_schema')`,
		3, func(s []string, f []float64) {
			fields := named(names, f)
			if s[2] != "NONE" { // the write counters belong to the table, reported once
				for _, n := range []string{"insert", "update", "delete"} {
					delete(fields, "index_io_waits_total_"+n)
					delete(fields, "index_io_waits_seconds_total_"+n)
				}
			}
			g.acc.AddFields("mysql_perf_schema", fields, g.tags("schema", s[0], "name", s[1], "index", s[2]))
		})
}

func (g *gatherer) tableLockWaits() error {
	var name string
	err := g.db.QueryRowContext(g.ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'performance_schema' AND table_name = ?`, "table_lock_waits_summary_by_table").Scan(&name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil // no performance schema
	case err != nil:
		return err
	}
	kinds := []string{"read_normal", "read_with_shared_locks", "read_high_priority", "read_no_insert", "read_external",
		"write_allow_write", "write_concurrent_insert", "write_low_priority", "write_normal", "write_external"}
	cols := make([]string, 0, 2*len(kinds))
	for _, prefix := range []string{"COUNT_", "SUM_TIMER_"} {
		for _, k := range kinds {
			cols = append(cols, prefix+strings.ToUpper(k))
		}
	}
	query := "SELECT OBJECT_SCHEMA, OBJECT_NAME, " + strings.Join(cols, ", ") + ` FROM performance_schema.table_lock_waits_summary_by_table
		WHERE OBJECT_SCHEMA NOT IN ('mysql', 'performance_schema', 'information_schema')`
	return g.scanFloats(query, 2, func(s []string, f []float64) {
		tags := g.tags("schema", s[0], "table", s[1])
		for _, q := range []struct {
			perf  string
			scale float64
			vals  []float64
		}{{"sql_lock_waits_total", 1, f[:10]}, {"sql_lock_waits_seconds_total", picoseconds, f[10:]}} {
			sqlFields, ext := map[string]any{}, map[string]any{}
			for i, k := range kinds {
				if base, ok := strings.CutSuffix(k, "_external"); ok {
					ext[base] = q.vals[i] / q.scale
				} else {
					sqlFields[k] = q.vals[i] / q.scale
				}
			}
			t := maps.Clone(tags)
			t["perf_query"] = q.perf
			g.acc.AddFields("mysql_perf_schema", sqlFields, t)
			t = maps.Clone(tags)
			t["perf_query"] = strings.Replace(q.perf, "sql_", "external_", 1)
			g.acc.AddFields("mysql_perf_schema", ext, t)
		}
	})
}

func (g *gatherer) eventWaits() error {
	return g.scanFloats(`SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM performance_schema.events_waits_summary_global_by_event_name`,
		1, func(s []string, f []float64) {
			g.acc.AddFields("mysql_perf_schema", map[string]any{"events_waits_total": f[0],
				"events_waits_seconds_total": f[1] / picoseconds}, g.tags("event_name", s[0]))
		})
}

func (g *gatherer) fileEvents() error {
	return g.scanFloats(`SELECT EVENT_NAME, COUNT_READ, SUM_TIMER_READ, SUM_NUMBER_OF_BYTES_READ,
		COUNT_WRITE, SUM_TIMER_WRITE, SUM_NUMBER_OF_BYTES_WRITE, COUNT_MISC, SUM_TIMER_MISC
		FROM performance_schema.file_summary_by_event_name`, 1, func(s []string, f []float64) {
		// Telegraf's misc metric counts the writes, and its read and write metrics share one
		// map: both quirks are kept, so that dashboards see the same numbers.
		g.acc.AddFields("mysql_perf_schema", map[string]any{"file_events_total": f[3],
			"file_events_seconds_total": f[7] / picoseconds}, g.tags("event_name", s[0], "mode", "misc"))
		g.acc.AddFields("mysql_perf_schema", map[string]any{"file_events_total": f[0],
			"file_events_seconds_total": f[1] / picoseconds, "file_events_bytes_totals": f[2]},
			g.tags("event_name", s[0], "mode", "read"))
		g.acc.AddFields("mysql_perf_schema", map[string]any{"file_events_total": f[3],
			"file_events_seconds_total": f[4] / picoseconds, "file_events_bytes_totals": f[5]},
			g.tags("event_name", s[0], "mode", "write"))
	})
}

func (g *gatherer) eventsStatements() error {
	m := g.m
	names := []string{"events_statements_total", "events_statements_seconds_total", "events_statements_errors_total",
		"events_statements_warnings_total", "events_statements_rows_affected_total", "events_statements_rows_sent_total",
		"events_statements_rows_examined_total", "events_statements_tmp_tables_total",
		"events_statements_tmp_disk_tables_total", "events_statements_sort_merge_passes_total",
		"events_statements_sort_rows_total", "events_statements_no_index_used_total"}
	query := fmt.Sprintf(`SELECT ifnull(SCHEMA_NAME, 'NONE') as SCHEMA_NAME, DIGEST, LEFT(DIGEST_TEXT, %d) as DIGEST_TEXT,
		COUNT_STAR, SUM_TIMER_WAIT, SUM_ERRORS, SUM_WARNINGS, SUM_ROWS_AFFECTED, SUM_ROWS_SENT, SUM_ROWS_EXAMINED,
		SUM_CREATED_TMP_TABLES, SUM_CREATED_TMP_DISK_TABLES, SUM_SORT_MERGE_PASSES, SUM_SORT_ROWS, SUM_NO_INDEX_USED
		FROM performance_schema.events_statements_summary_by_digest
		WHERE SCHEMA_NAME NOT IN ('mysql', 'performance_schema', 'information_schema')
			AND last_seen > DATE_SUB(NOW(), INTERVAL %d SECOND)
		ORDER BY SUM_TIMER_WAIT DESC LIMIT %d`,
		m.PerfEventsStatementsDigestTextLimit, m.PerfEventsStatementsTimeLimit, m.PerfEventsStatementsLimit)
	return g.scanFloats(query, 3, func(s []string, f []float64) {
		g.acc.AddFields("mysql_perf_schema", named(names, f), g.tags("schema", s[0], "digest", s[1], "digest_text", s[2]))
	})
}

func (g *gatherer) perfSummaryPerAccount() error {
	names := []string{"count_star", "sum_timer_wait", "min_timer_wait", "avg_timer_wait", "max_timer_wait",
		"sum_lock_time", "sum_errors", "sum_warnings", "sum_rows_affected", "sum_rows_sent", "sum_rows_examined",
		"sum_created_tmp_disk_tables", "sum_created_tmp_tables", "sum_select_full_join", "sum_select_full_range_join",
		"sum_select_range", "sum_select_range_check", "sum_select_scan", "sum_sort_merge_passes", "sum_sort_range",
		"sum_sort_rows", "sum_sort_scan", "sum_no_index_used", "sum_no_good_index_used"}
	query := `SELECT coalesce(user, "unknown"), coalesce(host, "unknown"), coalesce(event_name, "unknown"), ` +
		strings.Join(names, ", ") + " FROM performance_schema.events_statements_summary_by_account_by_event_name"
	var args []any
	if len(g.m.PerfSummaryEvents) > 0 {
		query += " WHERE EVENT_NAME IN (?" + strings.Repeat(", ?", len(g.m.PerfSummaryEvents)-1) + ")"
		for _, e := range g.m.PerfSummaryEvents {
			args = append(args, e)
		}
	}
	return g.scanFloats(query, 3, func(s []string, f []float64) {
		fields := make(map[string]any, len(names))
		for i, n := range names {
			fields[n] = f[i] // Telegraf keeps these timers in picoseconds
		}
		g.acc.AddFields("mysql_perf_acc_event", fields, g.tags("src_user", strings.ToLower(s[0]),
			"src_host", strings.ToLower(s[1]), "event", s[2]))
	}, args...)
}

// tableSchema adds the rows and sizes of each table, and its version with its type,
// engine, row format and options as tags.
func (g *gatherer) tableSchema() error {
	dbs := g.m.TableSchemaDatabases
	if len(dbs) == 0 {
		rows, err := g.db.QueryContext(g.ctx, `SELECT SCHEMA_NAME FROM information_schema.schemata
			WHERE SCHEMA_NAME NOT IN ('mysql', 'performance_schema', 'information_schema')`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			dbs = append(dbs, name)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, db := range dbs {
		if err := g.schemaOf(db); err != nil {
			return err
		}
	}
	return nil
}

func (g *gatherer) schemaOf(db string) error {
	// The database is an argument, not spliced into the query as Telegraf does.
	return g.scanStringsFloats(`SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ifnull(ENGINE, 'NONE') as ENGINE,
		ifnull(ROW_FORMAT, 'NONE') as ROW_FORMAT, ifnull(CREATE_OPTIONS, 'NONE') as CREATE_OPTIONS,
		ifnull(VERSION, '0') as VERSION, ifnull(TABLE_ROWS, '0') as TABLE_ROWS, ifnull(DATA_LENGTH, '0') as DATA_LENGTH,
		ifnull(INDEX_LENGTH, '0') as INDEX_LENGTH, ifnull(DATA_FREE, '0') as DATA_FREE
		FROM information_schema.tables WHERE TABLE_SCHEMA = ?`, db)
}

func (g *gatherer) scanStringsFloats(query, db string) error {
	return g.scanFloats(query, 6, func(s []string, f []float64) {
		tags := g.tags("schema", s[0], "table", s[1])
		for i, n := range []string{"rows", "data_length", "index_length", "data_free"} {
			g.acc.AddFields("mysql_table_schema", map[string]any{n: f[1+i]}, maps.Clone(tags))
		}
		tags["type"], tags["engine"], tags["row_format"], tags["create_options"] = s[2], s[3], s[4], s[5]
		g.acc.AddFields("mysql_table_schema_version", map[string]any{"table_version": f[0]}, tags)
	}, db)
}

// userStatistics adds information_schema.user_statistics by user, with the column types
// Telegraf picks by the table's width (MariaDB's busy_time and cpu_time are floats).
func (g *gatherer) userStatistics() error {
	rows, err := g.db.QueryContext(g.ctx, "SELECT * FROM information_schema.user_statistics")
	if err != nil {
		return err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	dest := make([]any, len(types))
	for i, ct := range types {
		switch {
		case i == 0:
			dest[i] = new(string)
		case (len(types) == 23 || len(types) == 25) && (i == 4 || i == 5):
			dest[i] = new(float64)
		case len(types) == 22 && (ct.ScanType().Kind() == reflect.Float32 || ct.ScanType().Kind() == reflect.Float64):
			dest[i] = new(float64)
		case len(types) >= 21 && len(types) <= 25 && len(types) != 24:
			dest[i] = new(int64)
		default:
			return fmt.Errorf("not Supported - %d columns", len(types))
		}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		fields := make(map[string]any, len(types))
		for i, ct := range types[1:] {
			switch v := dest[i+1].(type) {
			case *int64:
				fields[strings.ToLower(ct.Name())] = *v
			case *float64:
				fields[strings.ToLower(ct.Name())] = *v
			}
		}
		g.acc.AddFields("mysql_user_stats", fields, g.tags("user", *dest[0].(*string)))
	}
	return rows.Err()
}
