package socketwriter

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	_ "github.com/morse-agent/morse/plugins/inputs/file" // the input of the agent below
)

// TestAgentSendsCarbon2 runs an agent that reads line protocol with inputs.file and sends
// it with socket_writer as Carbon 2.0 (data_format = "carbon2", as a Sumo Logic collector
// takes it) to a TCP peer, which receives Telegraf's lines.
func TestAgentSendsCarbon2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lines := make(chan string, 100)
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					select {
					case lines <- sc.Text():
					default: // the test has what it needs
					}
				}
			})
		}
	})

	in := filepath.Join(t.TempDir(), "in.influx")
	require.NoError(t, os.WriteFile(in, []byte("cpu=1,cpu=cpu0 usage_idle=91.5,state=\"ok\",up=true 1700000000000000000\n"), 0o644))
	conf := fmt.Sprintf(`
[agent]
  interval = "100ms"
  flush_interval = "100ms"
  omit_hostname = true
[[inputs.file]]
  files = [%q]
[[outputs.socket_writer]]
  address = "tcp://%s"
  data_format = "carbon2"
  carbon2_format = "metric_includes_field"
`, in, ln.Addr())
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "test.conf", Data: []byte(conf)}}})
	require.NoError(t, err)
	testserver.RunAgent(t, cfg)

	// The string field is not written; the boolean is 1; '=' in the name is sanitized.
	for _, want := range []string{
		"metric=cpu:1_usage_idle cpu=cpu0  91.5 1700000000",
		"metric=cpu:1_up cpu=cpu0  1 1700000000",
	} {
		select {
		case got := <-lines:
			require.Equal(t, want, got)
		case <-time.After(30 * time.Second):
			t.Fatalf("no line from the agent; want %q", want)
		}
	}
}
