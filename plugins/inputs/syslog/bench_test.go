package syslog

import (
	"bytes"
	"os"
	"testing"

	"github.com/leodido/go-syslog/v4/rfc5424"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// BenchmarkParse is the cost of one message from bytes to metric: octet-counting framing
// of testdata/bench.octet (64 RFC 5424 messages of four shapes, structured data in three;
// the same bytes can be fed to Telegraf's octetcounting parser), parsing and building the
// metric, and the same messages as datagrams without the framing.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/bench.octet")
	if err != nil {
		b.Fatal(err)
	}
	s := New()
	if err := s.Init(); err != nil {
		b.Fatal(err)
	}
	s.stats = selfstat.NewPluginStats(nil, "internal_syslog", nil)
	if err := s.setup(); err != nil {
		b.Fatal(err)
	}
	var n int
	emit := func(morse.Metric) { n++ }
	fail := func(err error) { b.Fatal(err) }
	b.Run("octet-counting", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		n = 0
		d := s.newDecoder("127.0.0.1")
		for b.Loop() {
			if err := s.newStream(d, bytes.NewReader(data), emit, fail).octetCounting(8192); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
	})
	var msgs [][]byte
	for rest := data; len(rest) > 0; {
		sp := bytes.IndexByte(rest, ' ')
		l := 0
		for _, c := range rest[:sp] {
			l = l*10 + int(c-'0')
		}
		msgs = append(msgs, rest[sp+1:sp+1+l])
		rest = rest[sp+1+l:]
	}
	b.Run("datagram", func(b *testing.B) {
		b.ReportAllocs()
		d := s.newDecoder("127.0.0.1")
		n = 0
		for b.Loop() {
			for _, m := range msgs {
				if _, ok, err := d.decode(m); !ok || err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
	})
	// The parser alone, without building metrics: what go-syslog costs of the above.
	b.Run("go-syslog-only", func(b *testing.B) {
		b.ReportAllocs()
		m := rfc5424.NewMachine()
		n = 0
		for b.Loop() {
			for _, msg := range msgs {
				if _, err := m.Parse(msg); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
	})
}
