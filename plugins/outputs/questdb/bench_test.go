package questdb

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
)

// benchLines is the size of every batch the benchmarks write.
const benchLines = 1000

// benchBatch is 1000 metrics shaped like Telegraf's cpu input: three tags, ten float
// fields, one table. With lines, they are line metrics, as a listener hands them on.
func benchBatch(lines bool) []morse.Metric {
	fields := []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
		"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}
	batch := make([]morse.Metric, benchLines)
	for i := range batch {
		t := now.Add(time.Duration(i) * time.Millisecond)
		if lines {
			text := fmt.Sprintf("bench_lines,cpu=cpu%d,host=server-%02d,region=eu-west-1 ", i%8, i%50)
			for k, f := range fields {
				if k > 0 {
					text += ","
				}
				text += fmt.Sprintf("%s=%d.%03d", f, (i+k)%100, i%1000)
			}
			batch[i] = morse.NewLineMetric(morse.LineText{Text: text}, t)
			continue
		}
		fs := make([]morse.Field, len(fields))
		for k, f := range fields {
			fs[k] = morse.Field{Key: f, Value: morse.Float(float64((i+k)%100) + float64(i%1000)/1000)}
		}
		batch[i] = morse.NewMetric("bench_metrics", []morse.Tag{
			{Key: "cpu", Value: fmt.Sprintf("cpu%d", i%8)}, {Key: "host", Value: fmt.Sprintf("server-%02d", i%50)},
			{Key: "region", Value: "eu-west-1"},
		}, fs, t)
	}
	return batch
}

// processCPU is the CPU time this process has used, user and system. The QuestDB server is
// another process, so this is what the output (and the Go runtime under it) spends.
func processCPU(b *testing.B) time.Duration {
	user, sys := processTimes(b)
	return user + sys
}

// processTimes is the user and the system CPU time this process has used. Over loopback the
// system time includes the kernel's work for the receiving side whenever the server's
// socket has room, so it moves with how fast the server reads.
func processTimes(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkWrite writes prepared batches of 1000 lines to a real QuestDB 9.1.0 and reports
// lines per second and the CPU this process spends per line (and of it, in the kernel):
// serializing, checking, sending, and over TCP confirming. tcp is the default of one
// unconfirmed batch, with the tcp_confirm_delay that tcpServerProps allow, so its lines/s is
// one batch per delay; tcp-floor is the same pace with no output at all (see benchFloor);
// tcp-unconfirmed64 keeps up to 64 batches unconfirmed with no delay, for throughput.
func BenchmarkWrite(b *testing.B) {
	q := testserver.StartQuestDB(b, testserver.QuestDBOptions{Props: tcpServerProps})
	cases := []struct {
		name, protocol string
		confirm        time.Duration
		unconfirmed    int
	}{
		{"http", "http", 0, 1},
		{"tcp", "tcp", testDelay, 1},
		{"tcp-floor", "", testDelay, 1},
		{"tcp-unconfirmed64", "tcp", 0, 64},
	}
	for _, c := range cases {
		if c.protocol == "" {
			b.Run(c.name+"/idle", func(b *testing.B) { benchFloor(b, q, nil) })
		}
		for _, lines := range []bool{false, true} {
			kind := map[bool]string{false: "metrics", true: "lines"}[lines]
			b.Run(c.name+"/"+kind, func(b *testing.B) {
				if c.protocol == "" {
					benchFloor(b, q, benchBatch(lines))
					return
				}
				o := newOutput(b, q, c.protocol, func(o *QuestDB) {
					o.TCPConfirmDelay = morse.Duration(c.confirm)
					o.TCPUnconfirmedBatches = c.unconfirmed
				})
				benchOutput(b, o, benchBatch(lines))
			})
		}
	}
}

// benchOutput times o writing batch over and over.
func benchOutput(b *testing.B, o *QuestDB, batch []morse.Metric) {
	ctx := context.Background()
	if err := o.Write(ctx, batch); err != nil { // the table exists before timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	user0, sys0 := processTimes(b)
	start := time.Now()
	for b.Loop() {
		if err := o.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N * len(batch))
	user, sys := processTimes(b)
	b.ReportMetric(n/time.Since(start).Seconds(), "lines/s")
	b.ReportMetric(float64(user-user0+sys-sys0)/n, "cpu-ns/line")
	b.ReportMetric(float64(sys-sys0)/n, "sys-ns/line")
}

// benchFloor paces itself as the tcp row does, with no output: on a connection to the same
// server, each iteration waits tcp_confirm_delay for a close, as the sender waits for the
// batch before it, and then writes the batch, serialized once before timing. No checks, no
// serialization, no confirmation: it is the least that any sender keeping one batch
// unconfirmed per delay can spend. With no batch (idle) it only waits, and what that costs
// is what this machine charges for going idle and waking up. CPU is given per line of a
// 1000-line batch in both cases, to be set against the tcp row.
func benchFloor(b *testing.B, q *testserver.QuestDB, batch []morse.Metric) {
	var body []byte
	if batch != nil {
		o := New()
		if err := o.Init(); err != nil {
			b.Fatal(err)
		}
		s := o.getScratch()
		var sch schema
		o.serialize(s, batch, nil, &sch)
		body = s.bodyOf(s.lines)
	}
	conn, err := net.Dial("tcp", q.ILPAddr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	send := func() {
		if len(body) == 0 {
			return
		}
		if _, err := conn.Write(body); err != nil {
			b.Fatal(err)
		}
	}
	send() // the table exists before timing
	user0, sys0 := processTimes(b)
	for b.Loop() {
		if closedWithin(context.Background(), conn, time.Now().Add(testDelay)) {
			b.Fatal("QuestDB closed the connection")
		}
		send()
	}
	n := float64(b.N * benchLines)
	user, sys := processTimes(b)
	b.ReportMetric(float64(user-user0+sys-sys0)/n, "cpu-ns/line")
	b.ReportMetric(float64(sys-sys0)/n, "sys-ns/line")
}

// BenchmarkPrepare is the output's own work per batch without the network: checking and
// serializing 1000 metrics, grouped by table as for HTTP, with the learned types as for TCP.
func BenchmarkPrepare(b *testing.B) {
	for _, lines := range []bool{false, true} {
		kind := map[bool]string{false: "metrics", true: "lines"}[lines]
		b.Run(kind, func(b *testing.B) {
			o := New()
			if err := o.Init(); err != nil {
				b.Fatal(err)
			}
			batch := benchBatch(lines)
			s := o.getScratch()
			var sch schema
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				s.reset()
				for _, g := range s.groupByTable(batch) {
					o.serialize(s, batch, g.Positions, &sch)
				}
				sch.staged = sch.staged[:0]
			}
			n := float64(b.N * len(batch))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/line")
			b.ReportMetric(float64(processCPU(b)-cpu0)/n, "cpu-ns/line")
		})
	}
}

// BenchmarkPrepareAfterIdle is BenchmarkPrepare's work on structured metrics after the
// process has slept: what a write costs when it comes after a wait, as each write over TCP
// does by default (one per tcp_confirm_delay). On this 2-core VM the same work, with no
// network at all, cost 0.6 ms per 1000 metrics back to back, 1.4 ms after 100 ms asleep,
// 3.3 ms after 500 ms and 9.8 ms after 2 s: the machine, not the output, sets what a write
// after a wait costs, and BenchmarkWrite/tcp measures that too.
func BenchmarkPrepareAfterIdle(b *testing.B) {
	for _, idle := range []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond} {
		b.Run(idle.String(), func(b *testing.B) {
			o := New()
			if err := o.Init(); err != nil {
				b.Fatal(err)
			}
			batch := benchBatch(false)
			s := o.getScratch()
			var sch schema
			var cpu, wall time.Duration
			for b.Loop() { // the sleep is timed too, so that b.N stays small
				time.Sleep(idle)
				cpu0, start := processCPU(b), time.Now()
				s.reset()
				for _, g := range s.groupByTable(batch) {
					o.serialize(s, batch, g.Positions, &sch)
				}
				sch.staged = sch.staged[:0]
				wall += time.Since(start)
				cpu += processCPU(b) - cpu0
			}
			n := float64(b.N * len(batch))
			b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/line")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/line")
		})
	}
}
