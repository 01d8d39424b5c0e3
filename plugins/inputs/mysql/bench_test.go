package mysql

import (
	"os"
	"testing"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// BenchmarkGather is one gather from the shared MariaDB, the connection kept: time and
// allocations per gather, of the defaults (SHOW GLOBAL STATUS) and with the global
// variables read every time. docs/bench/mysql.md sets the first beside Telegraf 1.39.3's
// mysql input on the same server.
// MORSE_MYSQL_DSN, when set, names the server instead, so that both agents can be measured
// against one server started by hand.
func BenchmarkGather(b *testing.B) {
	dsn := os.Getenv("MORSE_MYSQL_DSN")
	if dsn == "" {
		dsn = testserver.SharedMariaDB(b).DSN("tls=false")
	}
	for _, c := range []struct{ name, extra string }{{"status", ""}, {"status+variables", `interval_slow = "1s"`}} {
		b.Run(c.name, func(b *testing.B) {
			m := build(b, `servers = ["`+dsn+`"]`+"\n"+c.extra)
			ctx := testutil.Context(b)
			acc := &discard{}
			b.ReportAllocs()
			for b.Loop() {
				m.servers[0].lastVars = m.servers[0].lastVars.AddDate(-1, 0, 0) // due every time
				if err := m.Gather(ctx, acc); err != nil {
					b.Fatal(err)
				}
			}
			if acc.errors.Load() > 0 {
				b.Fatalf("%d errors", acc.errors.Load())
			}
			b.ReportMetric(float64(acc.metrics.Load())/float64(b.N), "metrics/gather")
		})
	}
}
