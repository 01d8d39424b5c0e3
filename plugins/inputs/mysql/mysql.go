// Package mysql is the inputs.mysql plugin: every interval it reads SHOW GLOBAL STATUS
// from each MySQL or MariaDB server, and with its gather_* options the global variables,
// binary logs, replication status, process list, user statistics, InnoDB metrics,
// AUTO_INCREMENT columns, table sizes and the performance schema's summaries, with Telegraf
// 1.39.3's metric_version 2 measurements, tags, fields and types. It uses
// github.com/go-sql-driver/mysql and Telegraf's DSNs.
//
// Unlike Telegraf, which opens a connection per server and gather, it keeps one connection
// per server between gathers; metric_version 1 is not supported.
package mysql

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics from one or many mysql servers"

//go:embed sample.conf
var sampleConfig string

// Mysql is the inputs.mysql plugin and its configuration. Build it with New.
type Mysql struct {
	// Servers are go-sql-driver DSNs, user:password@tcp(host:port)/?tls=false; empty means
	// tcp(127.0.0.1:3306)/. tls=custom uses this table's TLS options.
	Servers []morse.Secret `toml:"servers"`
	// MetricVersion must be 2 (Telegraf's layout since 1.6), the default here.
	MetricVersion int `toml:"metric_version"`
	// TableSchemaDatabases limits gather_table_schema to these databases; empty is all.
	TableSchemaDatabases []string `toml:"table_schema_databases"`
	// The gather_* options each add a query and its measurement, as in Telegraf.
	GatherTableSchema                   bool `toml:"gather_table_schema"`
	GatherProcessList                   bool `toml:"gather_process_list"`
	GatherUserStatistics                bool `toml:"gather_user_statistics"`
	GatherInfoSchemaAutoInc             bool `toml:"gather_info_schema_auto_inc"`
	GatherInnoDBMetrics                 bool `toml:"gather_innodb_metrics"`
	GatherAllSlaveChannels              bool `toml:"gather_all_slave_channels"`
	GatherSlaveStatus                   bool `toml:"gather_slave_status"`
	GatherReplicaStatus                 bool `toml:"gather_replica_status"`
	MariadbDialect                      bool `toml:"mariadb_dialect"`
	GatherBinaryLogs                    bool `toml:"gather_binary_logs"`
	GatherGlobalVars                    bool `toml:"gather_global_variables"`
	GatherTableIOWaits                  bool `toml:"gather_table_io_waits"`
	GatherTableLockWaits                bool `toml:"gather_table_lock_waits"`
	GatherIndexIOWaits                  bool `toml:"gather_index_io_waits"`
	GatherEventWaits                    bool `toml:"gather_event_waits"`
	GatherFileEventsStats               bool `toml:"gather_file_events_stats"`
	GatherPerfEventsStatements          bool `toml:"gather_perf_events_statements"`
	GatherPerfSummaryPerAccountPerEvent bool `toml:"gather_perf_sum_per_acc_per_event"`
	// PerfSummaryEvents limits gather_perf_sum_per_acc_per_event to these events.
	PerfSummaryEvents []string `toml:"perf_summary_events"`
	// The limits of gather_perf_events_statements.
	PerfEventsStatementsDigestTextLimit int64 `toml:"perf_events_statements_digest_text_limit"`
	PerfEventsStatementsLimit           int64 `toml:"perf_events_statements_limit"`
	PerfEventsStatementsTimeLimit       int64 `toml:"perf_events_statements_time_limit"`
	// IntervalSlow is how often the global variables are read. As in Telegraf, they are
	// read only when it is at least 1s.
	IntervalSlow morse.Duration `toml:"interval_slow"`
	tlsclient.Config

	servers []*server
}

// server is one configured server: its connection pool and tag.
type server struct {
	db       *sql.DB
	tag      string
	lastVars time.Time
}

var (
	_ morse.ServiceInput = (*Mysql)(nil)
	_ morse.Validator    = (*Mysql)(nil)
	_ morse.Initializer  = (*Mysql)(nil)
)

// New returns the plugin with Telegraf's defaults (and metric_version 2).
func New() *Mysql {
	return &Mysql{MetricVersion: 2, GatherGlobalVars: true, PerfEventsStatementsDigestTextLimit: 120,
		PerfEventsStatementsLimit: 250, PerfEventsStatementsTimeLimit: 86400}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name: "mysql", Description: Description, SampleConfig: sampleConfig,
		New: func() morse.Input { return New() },
	})
}

var tlsCustom = regexp.MustCompile(`([\?&])(?:tls=custom)($|&)`)

// Validate reports every problem of the options.
func (m *Mysql) Validate() error {
	errs := []error{m.Config.Validate()}
	if m.MetricVersion != 2 {
		errs = append(errs, morse.Errorf("metric_version", "only metric_version = 2 is supported, not %d", m.MetricVersion))
	}
	for i, s := range m.Servers {
		dsn := tlsCustom.ReplaceAllString(string(s), "${1}tls=false${2}") // registered in Init
		if _, err := mysql.ParseDSN(dsn); err != nil {
			errs = append(errs, morse.Errorf("servers", "server %d: %v", i+1, err))
		}
	}
	return errors.Join(errs...)
}

// tlsSeq makes the name of each instance's TLS config unique in the driver's registry.
var tlsSeq atomic.Uint64

// Init parses the DSNs, registers the TLS config that tls=custom names, and opens a pool
// of one connection per server (connections open on the first query).
func (m *Mysql) Init() error {
	if err := m.Validate(); err != nil {
		return err
	}
	tlsName := fmt.Sprintf("morse-custom-%d", tlsSeq.Add(1))
	tlsCfg, err := m.Config.TLSConfig()
	if err != nil {
		return fmt.Errorf("registering TLS config: %w", err)
	}
	if tlsCfg != nil {
		if err := mysql.RegisterTLSConfig(tlsName, tlsCfg); err != nil {
			return err
		}
	}
	list := m.Servers
	if len(list) == 0 {
		list = []morse.Secret{""}
	}
	m.Stop()
	for _, s := range list {
		dsn := tlsCustom.ReplaceAllString(string(s), "${1}tls="+tlsName+"${2}")
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return morse.Errorf("servers", "%v", err)
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = 5 * time.Second
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return morse.Errorf("servers", "%v", err)
		}
		db := sql.OpenDB(conn)
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(time.Hour)
		m.servers = append(m.servers, &server{db: db, tag: cfg.Addr})
	}
	return nil
}

// Start does nothing: the connections open on the first gather.
func (m *Mysql) Start(context.Context, morse.Accumulator) error { return nil }

// Stop closes the connections.
func (m *Mysql) Stop() {
	for _, s := range m.servers {
		_ = s.db.Close()
	}
	m.servers = nil
}

// Gather queries the servers in parallel; a server that fails adds an error naming it.
func (m *Mysql) Gather(ctx context.Context, acc morse.Accumulator) error {
	if m.servers == nil {
		if err := m.Init(); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() {
			if err := m.gatherServer(ctx, s, acc); err != nil {
				acc.AddError(fmt.Errorf("mysql %s: %w", s.tag, err))
			}
		})
	}
	wg.Wait()
	return nil
}

// gatherServer runs the enabled queries in Telegraf's order; the first that fails ends the
// server's gather.
func (m *Mysql) gatherServer(ctx context.Context, s *server, acc morse.Accumulator) error {
	g := &gatherer{m: m, db: s.db, ctx: ctx, acc: acc, tag: s.tag}
	if err := g.globalStatus(); err != nil {
		return err
	}
	if slow := time.Duration(m.IntervalSlow); m.GatherGlobalVars && slow >= time.Second && time.Since(s.lastVars) >= slow {
		if err := g.globalVariables(); err != nil {
			return err
		}
		s.lastVars = time.Now()
	}
	steps := []struct {
		on bool
		do func() error
	}{
		{m.GatherBinaryLogs, g.binaryLogs},
		{m.GatherProcessList, g.processList},
		{m.GatherUserStatistics, g.userStatistics},
		{m.GatherSlaveStatus || m.GatherReplicaStatus, g.replicaStatus},
		{m.GatherInfoSchemaAutoInc, g.autoIncrement},
		{m.GatherInnoDBMetrics, g.innodbMetrics},
		{m.GatherPerfSummaryPerAccountPerEvent, g.perfSummaryPerAccount},
		{m.GatherTableIOWaits, g.tableIOWaits},
		{m.GatherIndexIOWaits, g.indexIOWaits},
		{m.GatherTableLockWaits, g.tableLockWaits},
		{m.GatherEventWaits, g.eventWaits},
		{m.GatherFileEventsStats, g.fileEvents},
		{m.GatherPerfEventsStatements, g.eventsStatements},
		{m.GatherTableSchema, g.tableSchema},
	}
	for _, st := range steps {
		if st.on {
			if err := st.do(); err != nil {
				return err
			}
		}
	}
	return nil
}
