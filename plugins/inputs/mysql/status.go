package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"strings"

	"github.com/morse-agent/morse"
)

// gatherer runs one server's queries of one gather.
type gatherer struct {
	m   *Mysql
	db  *sql.DB
	ctx context.Context
	acc morse.Accumulator
	tag string
}

// batch is Telegraf's flush of the key/value queries: 20 fields a metric.
const batch = 20

func (g *gatherer) tags(kv ...string) map[string]string {
	t := make(map[string]string, 1+len(kv)/2)
	t["server"] = g.tag
	for i := 0; i+1 < len(kv); i += 2 {
		t[kv[i]] = kv[i+1]
	}
	return t
}

// lowerKeys caches the lower-case form of the status and variable names, which repeat
// every gather.
var lowerKeys lowerCache

// keyValues runs a two-column query and adds measurement with each converted value, 20
// fields a metric. withVersion copies the values of keys that contain "version" into tags.
func (g *gatherer) keyValues(query, measurement string, table map[string]conversion, what string, withVersion bool) error {
	rows, err := g.db.QueryContext(g.ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	tags := g.tags()
	fields := make(map[string]any, batch+5)
	var rawKey, val sql.RawBytes
	empty := 0 // Telegraf's batches count the keys of empty values, which it then drops
	for rows.Next() {
		if err := rows.Scan(&rawKey, &val); err != nil {
			return err
		}
		key := lowerKeys.lower(rawKey)
		if len(val) == 0 {
			if _, ok := fields[key]; !ok {
				empty++
			}
		}
		if withVersion && strings.Contains(key, "version") {
			fields[key] = string(val)
			tags[key] = string(val)
		}
		v, err := convert(table, key, val)
		if err != nil {
			g.acc.AddError(fmt.Errorf("error parsing mysql %s %q=%q: %w", what, key, val, err))
		} else {
			addValue(fields, key, v)
		}
		if len(fields)+empty >= batch {
			g.acc.AddFields(measurement, fields, maps.Clone(tags))
			fields, empty = make(map[string]any, batch+5), 0
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(fields) > 0 {
		g.acc.AddFields(measurement, fields, tags)
	}
	return nil
}

func (g *gatherer) globalStatus() error {
	return g.keyValues("SHOW GLOBAL STATUS", "mysql", statusConversions, "global status", false)
}

func (g *gatherer) globalVariables() error {
	return g.keyValues("SHOW GLOBAL VARIABLES", "mysql_variables", variableConversions, "global variable", true)
}

// binaryLogs adds the count and total size of the binary logs.
func (g *gatherer) binaryLogs() error {
	rows, err := g.db.QueryContext(g.ctx, "SHOW BINARY LOGS")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var size, count, fileSize uint64
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	if len(cols) >= 2 {
		dest[1] = &fileSize
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		size += fileSize
		count++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	g.acc.AddFields("mysql", map[string]any{"binary_size_bytes": size, "binary_files_count": count}, g.tags())
	return nil
}

// processList counts the threads by state (every state, zero included) and the
// connections by user.
func (g *gatherer) processList() error {
	rows, err := g.db.QueryContext(g.ctx, `SELECT COALESCE(command,''), COALESCE(state,''), count(*)
		FROM information_schema.processlist WHERE ID != connection_id() GROUP BY command, state ORDER BY null`)
	if err != nil {
		return err
	}
	defer rows.Close()
	counts := make(map[string]uint64, len(threadStates))
	for _, s := range threadStates {
		counts[s] = 0
	}
	var command, state string
	var n uint64
	for rows.Next() {
		if err := rows.Scan(&command, &state, &n); err != nil {
			return err
		}
		counts[threadState(command, state)] += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fields := make(map[string]any, len(counts))
	for s, c := range counts {
		fields["threads_"+strings.ReplaceAll(s, " ", "_")] = c
	}
	g.acc.AddFields("mysql_process_list", fields, g.tags())

	users, err := g.db.QueryContext(g.ctx, "SELECT user, sum(1) AS connections FROM INFORMATION_SCHEMA.PROCESSLIST GROUP BY user")
	if err != nil {
		return err
	}
	defer users.Close()
	for users.Next() {
		var user string
		var conns int64
		if err := users.Scan(&user, &conns); err != nil {
			return err
		}
		g.acc.AddFields("mysql_users", map[string]any{"connections": conns}, g.tags("user", user))
	}
	return users.Err()
}

// replicaStatus adds the first row (or, with gather_all_slave_channels, every row) of the
// replication status as slave_<column> fields.
func (g *gatherer) replicaStatus() error {
	m := g.m
	query := "SHOW SLAVE STATUS"
	switch {
	case m.MariadbDialect && m.GatherReplicaStatus:
		query = "SHOW ALL REPLICAS STATUS"
	case m.MariadbDialect:
		query = "SHOW ALL SLAVES STATUS"
	case m.GatherReplicaStatus:
		query = "SHOW REPLICA STATUS"
	}
	rows, err := g.db.QueryContext(g.ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	tags := g.tags()
	fields := map[string]any{}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, col := range cols {
			name := strings.ToLower(col.Name())
			if m.GatherAllSlaveChannels && (name == "channel_name" || name == "connection_name") {
				tags["channel"] = "default"
				if len(vals[i]) > 0 {
					tags["channel"] = string(vals[i])
				}
				continue
			}
			if len(vals[i]) == 0 {
				continue
			}
			v, err := byTypeName(vals[i], col.DatabaseTypeName())
			if err != nil {
				g.acc.AddError(fmt.Errorf("error parsing mysql slave status %q=%q: %w", name, vals[i], err))
				continue
			}
			fields["slave_"+name] = v
		}
		g.acc.AddFields("mysql", maps.Clone(fields), maps.Clone(tags))
		if !m.GatherAllSlaveChannels {
			break
		}
	}
	return rows.Err()
}

// autoIncrement adds each AUTO_INCREMENT column's next value and its type's maximum.
func (g *gatherer) autoIncrement() error {
	rows, err := g.db.QueryContext(g.ctx, `SELECT table_schema, table_name, column_name, auto_increment,
		CAST(pow(2, case data_type when 'tinyint' then 7 when 'smallint' then 15 when 'mediumint' then 23
			when 'int' then 31 when 'bigint' then 63 end + (column_type like '% unsigned')) - 1 as decimal(19)) as max_int
		FROM information_schema.tables t JOIN information_schema.columns c USING (table_schema, table_name)
		WHERE c.extra = 'auto_increment' AND t.auto_increment IS NOT NULL`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var schema, table, column string
		var next, maxInt uint64
		if err := rows.Scan(&schema, &table, &column, &next, &maxInt); err != nil {
			return err
		}
		g.acc.AddFields("mysql_table_schema", map[string]any{"auto_increment_column": next,
			"auto_increment_column_max": maxInt}, g.tags("schema", schema, "table", table, "column", column))
	}
	return rows.Err()
}

// innodbMetrics adds the enabled counters of information_schema.INNODB_METRICS.
func (g *gatherer) innodbMetrics() error {
	query := "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE status='enabled'"
	if g.m.MariadbDialect {
		// MariaDB 10.5 and later name the column ENABLED.
		query = `EXECUTE IMMEDIATE CONCAT("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE ",
			IF(version() REGEXP '10\.[1-4]\\..*', "status='enabled'", "ENABLED=1"))`
	}
	rows, err := g.db.QueryContext(g.ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	tags := g.tags()
	fields := make(map[string]any, batch)
	var rawKey, val sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&rawKey, &val); err != nil {
			return err
		}
		key := lowerKeys.lower(rawKey)
		v, err := parseUint(val)
		if err != nil {
			g.acc.AddError(fmt.Errorf("error parsing mysql InnoDB metric %q=%q: %w", key, val, err))
			continue
		}
		fields[key] = v
		if len(fields) >= batch {
			g.acc.AddFields("mysql_innodb", fields, tags)
			fields = make(map[string]any, batch)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(fields) > 0 {
		g.acc.AddFields("mysql_innodb", fields, tags)
	}
	return nil
}
