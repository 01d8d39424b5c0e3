// Package postgresql is the inputs.postgresql plugin: every interval it reads
// pg_stat_database (one metric per database) and pg_stat_bgwriter from one server, with
// Telegraf 1.39.3's options, measurement, tags and fields: every column but stats_reset, of
// the type the driver returns it in. It uses github.com/jackc/pgx/v5 through database/sql,
// as Telegraf does, with one connection kept between gathers.
package postgresql

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics from one or many postgresql servers"

//go:embed sample.conf
var sampleConfig string

// Postgresql is the inputs.postgresql plugin and its configuration. Build it with New.
type Postgresql struct {
	// Address is a postgres:// URL or key/value pairs (host=... user=... sslmode=...); empty
	// or "localhost" means host=localhost sslmode=disable.
	Address morse.Secret `toml:"address"`
	// OutputAddress replaces the server tag.
	OutputAddress string `toml:"outputaddress"`
	// MaxLifetime bounds a connection's life; 0 keeps it.
	MaxLifetime morse.Duration `toml:"max_lifetime"`
	// MaxIdle and MaxOpen size the connection pool (1 and 1).
	MaxIdle int `toml:"max_idle"`
	MaxOpen int `toml:"max_open"`
	// Databases limits pg_stat_database to these; IgnoredDatabases leaves these out.
	Databases        []string `toml:"databases"`
	IgnoredDatabases []string `toml:"ignored_databases"`
	// PreparedStatements off uses the simple protocol, for PgBouncer in transaction mode.
	PreparedStatements bool `toml:"prepared_statements"`

	db                *sql.DB
	serverTag, connDB string
	databaseQuery     string
	databaseQueryArgs []any
}

var (
	_ morse.ServiceInput = (*Postgresql)(nil)
	_ morse.Validator    = (*Postgresql)(nil)
	_ morse.Initializer  = (*Postgresql)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Postgresql { return &Postgresql{MaxIdle: 1, MaxOpen: 1, PreparedStatements: true} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name: "postgresql", Description: Description, SampleConfig: sampleConfig,
		New: func() morse.Input { return New() },
	})
}

func (p *Postgresql) address() string {
	if a := string(p.Address); a != "" && a != "localhost" {
		return a
	}
	return "host=localhost sslmode=disable"
}

// Validate reports every problem of the options.
func (p *Postgresql) Validate() error {
	var errs []error
	if _, err := pgx.ParseConfig(p.address()); err != nil {
		errs = append(errs, morse.Errorf("address", "%v", err))
	}
	if _, err := sanitize(p.address()); err != nil {
		errs = append(errs, morse.Errorf("address", "%v", err))
	}
	if len(p.Databases) > 0 && len(p.IgnoredDatabases) > 0 {
		errs = append(errs, morse.Errorf("databases", "do not use with ignored_databases: Telegraf then ignores databases"))
	}
	if p.MaxLifetime < 0 {
		errs = append(errs, morse.Errorf("max_lifetime", "must not be negative"))
	}
	return errors.Join(errs...)
}

// Init parses the address and opens the pool (connections open on the first query).
func (p *Postgresql) Init() error {
	if err := p.Validate(); err != nil {
		return err
	}
	cfg, _ := pgx.ParseConfig(p.address())
	cfg.Host = socketSuffix.ReplaceAllLiteralString(cfg.Host, "")
	if !p.PreparedStatements {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	p.serverTag = p.OutputAddress
	if p.serverTag == "" {
		p.serverTag, _ = sanitize(p.address())
	}
	s, _ := sanitize(p.address())
	p.connDB = connectionDatabase(s)
	p.databaseQuery, p.databaseQueryArgs = "SELECT * FROM pg_stat_database", nil
	// The names are arguments rather than spliced into the query as Telegraf does.
	switch {
	case len(p.IgnoredDatabases) > 0:
		p.databaseQuery += " WHERE datname <> ALL($1)"
		p.databaseQueryArgs = []any{p.IgnoredDatabases}
	case len(p.Databases) > 0:
		p.databaseQuery += " WHERE datname = ANY($1)"
		p.databaseQueryArgs = []any{p.Databases}
	}
	p.Stop()
	p.db = sql.OpenDB(stdlib.GetConnector(*cfg))
	p.db.SetMaxOpenConns(p.MaxOpen)
	p.db.SetMaxIdleConns(p.MaxIdle)
	p.db.SetConnMaxLifetime(time.Duration(p.MaxLifetime))
	return nil
}

// Start does nothing: the connection opens on the first gather.
func (p *Postgresql) Start(context.Context, morse.Accumulator) error { return nil }

// Stop closes the connections.
func (p *Postgresql) Stop() {
	if p.db != nil {
		_ = p.db.Close()
		p.db = nil
	}
}

// Gather adds a metric per database of pg_stat_database, then pg_stat_bgwriter's.
func (p *Postgresql) Gather(ctx context.Context, acc morse.Accumulator) error {
	if p.db == nil {
		if err := p.Init(); err != nil {
			return err
		}
	}
	if err := p.query(ctx, acc, p.databaseQuery, p.databaseQueryArgs...); err != nil {
		return fmt.Errorf("postgresql %s: %w", p.serverTag, err)
	}
	if err := p.query(ctx, acc, "SELECT * FROM pg_stat_bgwriter"); err != nil {
		return fmt.Errorf("postgresql %s: %w", p.serverTag, err)
	}
	return nil
}

func (p *Postgresql) query(ctx context.Context, acc morse.Accumulator, q string, args ...any) error {
	rows, err := p.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		p.addRow(acc, cols, vals)
	}
	return rows.Err()
}

// addRow adds one row: the database name (postgres_global for PostgreSQL 12's row of the
// shared objects) or the connection's database as the db tag, every column but stats_reset
// as a field. NULLs and timestamps are no fields, as Telegraf's metrics drop them.
func (p *Postgresql) addRow(acc morse.Accumulator, cols []string, vals []any) {
	db := p.connDB
	fields := make(map[string]any, len(cols))
	for i, c := range cols {
		if c == "datname" {
			db = "postgres_global"
			if s, ok := vals[i].(string); ok {
				db = s
			}
		}
		if c == "stats_reset" {
			continue
		}
		if v, ok := fieldValue(vals[i]); ok {
			fields[c] = v
		}
	}
	acc.AddFields("postgresql", fields, map[string]string{"server": p.serverTag, "db": db})
}

// fieldValue is v as Telegraf's metric keeps it: database/sql hands over int64 (an oid
// too), float64, string, bool, []byte and time.Time; timestamps and NULLs are left out.
func fieldValue(v any) (any, bool) {
	switch x := v.(type) {
	case int64, float64, string, bool:
		return x, true
	case []byte:
		return string(x), true
	}
	return nil, false
}
