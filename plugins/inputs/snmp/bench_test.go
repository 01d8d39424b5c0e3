package snmp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// BenchmarkGather gathers the shared snmpd's 1,000-row table, eleven numeric columns (one a
// tag), over v2c with Telegraf's default max_repetitions: the time and allocations of one
// gather. docs/bench/snmp.md sets it beside Telegraf 1.39.3's plugin on the same agent.
func BenchmarkGather(b *testing.B) {
	var conf strings.Builder
	conf.WriteString("[[table]]\n  name = \"if\"\n")
	for c := 1; c <= 11; c++ {
		fmt.Fprintf(&conf, "  [[table.field]]\n    oid = \"%s.%d\"\n    name = \"c%d\"\n    is_tag = %v\n", testserver.SnmpdIfEntry, c, c, c == 2)
	}
	s := build(b, conf.String())
	ctx := testutil.Context(b)
	b.ReportAllocs()
	for b.Loop() {
		acc := &testutil.Accumulator{}
		if err := s.Gather(ctx, acc); err != nil || len(acc.Errors()) > 0 || acc.NMetrics() != testserver.SnmpdRows {
			b.Fatal(err, acc.Errors(), acc.NMetrics())
		}
	}
}
