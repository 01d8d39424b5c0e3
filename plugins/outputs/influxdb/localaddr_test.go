package influxdb

import (
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestLocalAddress binds the output's connections to 127.0.0.2, as Telegraf's local_address
// does. A real InfluxDB does not tell who connected, so a hand-written sink records the
// peer address.
func TestLocalAddress(t *testing.T) {
	var mu sync.Mutex
	var peers []string
	url := fakeSink(t, func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		peers = append(peers, host)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	for _, local := range []string{"127.0.0.2", "127.0.0.2:0"} {
		o := connected(t, url, "db", func(o *InfluxDB) { o.SkipDatabaseCreation = true; o.LocalAddress = local })
		require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)}))
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"127.0.0.2", "127.0.0.2"}, peers)
}

func TestLocalAddressIsChecked(t *testing.T) {
	tests := map[string]string{
		"":               "",
		"127.0.0.1":      "",
		"[::1]:1234":     "",
		"127.0.0.1:port": "invalid port",
	}
	for addr, want := range tests {
		o := New()
		o.URLs, o.Database, o.LocalAddress = []string{"http://127.0.0.1:8086"}, "db", addr
		err := o.Validate()
		if want == "" {
			require.NoError(t, err, addr)
			continue
		}
		require.ErrorContains(t, err, "local_address: "+want, addr)
	}
}
