package testserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ilpHTTP posts line protocol to QuestDB's /write and returns the status and body.
func ilpHTTP(t *testing.T, q *QuestDB, user, pass, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, q.URL()+"/write", strings.NewReader(body))
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// ilpTCP writes line protocol to QuestDB's ILP/TCP port and closes the connection.
func ilpTCP(t *testing.T, q *QuestDB, body string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", q.ILPAddr(), 5*time.Second)
	require.NoError(t, err)
	_, err = io.WriteString(c, body)
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// listening returns the local IPv4 and IPv6 addresses on which something listens on port,
// read from the kernel's socket tables.
func listening(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// fields[1] is HEXIP:HEXPORT, fields[3] the state; 0A is LISTEN.
			ip, p, ok := strings.Cut(fields[1], ":")
			n, err := strconv.ParseUint(p, 16, 16)
			if ok && err == nil && int(n) == port && fields[3] == "0A" {
				addrs = append(addrs, ip)
			}
		}
		f.Close()
	}
	return addrs
}

func TestQuestDBHarness(t *testing.T) {
	jarStart := time.Now()
	jar := QuestDBJar(t)
	t.Logf("jar %s ready in %s", jar, time.Since(jarStart))

	start := time.Now()
	q := StartQuestDB(t, QuestDBOptions{})
	t.Logf("QuestDB %s cold start (new data directory) ready in %s", QuestDBVersion, time.Since(start))

	t.Run("every listener on 127.0.0.1 only", func(t *testing.T) {
		for name, addr := range map[string]string{"http": q.HTTPAddr(), "ilp": q.ILPAddr(), "pg": q.PGAddr(), "min": q.HealthAddr()} {
			_, p, err := net.SplitHostPort(addr)
			require.NoError(t, err)
			port, err := strconv.Atoi(p)
			require.NoError(t, err)
			// 0100007F is 127.0.0.1 as the kernel prints it (little-endian hex).
			require.Equal(t, []string{"0100007F"}, listening(t, port), "%s listener at %s", name, addr)
		}
	})

	t.Run("ILP over HTTP is queryable with its types", func(t *testing.T) {
		status, body := ilpHTTP(t, q, "", "", "h,host=a i=-3i,f=1.5,s=\"hi \\\"x\\\"\",b=true 1700000000000001000\n")
		require.Equal(t, http.StatusNoContent, status, body)
		q.WaitCount(t, "h", 1, 30*time.Second)
		res := q.MustQuery(t, "SELECT host, i, f, s, b, timestamp FROM h")
		require.Equal(t, []QuestColumn{{"host", "SYMBOL"}, {"i", "LONG"}, {"f", "DOUBLE"}, {"s", "VARCHAR"}, {"b", "BOOLEAN"}, {"timestamp", "TIMESTAMP"}}, res.Columns)
		require.Equal(t, [][]any{{"a", json.Number("-3"), json.Number("1.5"), `hi "x"`, true, "2023-11-14T22:13:20.000001Z"}}, res.Dataset)
	})

	t.Run("a refused line names itself", func(t *testing.T) {
		status, body := ilpHTTP(t, q, "", "", "h i=1i 1700000000000002000\nh i=\"x\" 1700000000000003000\n")
		require.Equal(t, http.StatusBadRequest, status)
		var e struct {
			Code, Message string
			Line          int
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		require.Equal(t, "invalid", e.Code)
		require.Equal(t, 2, e.Line)
		require.Contains(t, e.Message, "cast error from protocol type: STRING to column type: LONG")
	})

	t.Run("ILP over TCP", func(t *testing.T) {
		var b strings.Builder
		for i := range 100 {
			fmt.Fprintf(&b, "tcp v=%di %d\n", i, 1700000000000000000+int64(i)*1000)
		}
		ilpTCP(t, q, b.String())
		q.WaitCount(t, "tcp", 100, 30*time.Second)
	})

	t.Run("restart keeps ports and data", func(t *testing.T) {
		addr := q.URL()
		start := time.Now()
		q.Restart(t)
		t.Logf("QuestDB warm restart (graceful stop and start on the same data) in %s", time.Since(start))
		require.Equal(t, addr, q.URL())
		require.Equal(t, int64(100), q.Count(t, "tcp"))
		require.Equal(t, int64(1), q.Count(t, "h"))
		ilpTCP(t, q, "tcp v=100i 1700000000000100000\n")
		q.WaitCount(t, "tcp", 101, 30*time.Second)
	})

	t.Run("stop then start", func(t *testing.T) {
		q.Stop(t)
		_, err := net.DialTimeout("tcp", q.ILPAddr(), time.Second)
		require.Error(t, err, "ILP port still open after Stop")
		q.Start(t)
		require.Equal(t, int64(101), q.Count(t, "tcp"))
	})
}

func TestQuestDBBasicAuth(t *testing.T) {
	q := StartQuestDB(t, QuestDBOptions{HTTPUser: "morse", HTTPPassword: "s3cret"})
	status, _ := ilpHTTP(t, q, "", "", "a v=1i\n")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = ilpHTTP(t, q, "morse", "wrong", "a v=1i\n")
	require.Equal(t, http.StatusUnauthorized, status)
	status, body := ilpHTTP(t, q, "morse", "s3cret", "a v=1i\n")
	require.Equal(t, http.StatusNoContent, status, body)
	q.WaitCount(t, "a", 1, 30*time.Second) // the harness's queries authenticate
}
