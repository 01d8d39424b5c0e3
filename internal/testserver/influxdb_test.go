package testserver

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/influxquery"
)

// requireWrite checks a /write answer exactly: status, body and the
// X-Influxdb-Error header, which carries the same message.
func requireWrite(t *testing.T, got WriteResult, status int, errMsg string) {
	t.Helper()
	require.Equal(t, status, got.Status, "body: %s", got.Body)
	if errMsg == "" {
		require.Empty(t, got.Body)
		return
	}
	want, err := json.Marshal(map[string]string{"error": errMsg})
	require.NoError(t, err)
	require.Equal(t, string(want)+"\n", got.Body)
	// Go's net/http turns the newlines of a multi-line message into spaces
	// in the header; the body keeps them.
	require.Equal(t, strings.ReplaceAll(errMsg, "\n", " "), got.Header.Get("X-Influxdb-Error"))
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
}

func TestInfluxDB(t *testing.T) {
	img := InfluxImage(t)
	t.Logf("image %s: built=%v in %s (content hash %.12s)", img.Ref, img.Built, img.Took, img.ContentHash)

	start := time.Now()
	in := StartInfluxDB(t, InfluxOptions{})
	t.Logf("container ready at %s in %s", in.URL(), time.Since(start))
	require.True(t, strings.HasPrefix(in.URL(), "http://127.0.0.1:"), in.URL())

	t.Run("ping", func(t *testing.T) {
		resp, err := httpClient.Get(in.URL() + "/ping")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		require.Equal(t, "1.6.7~rc0", resp.Header.Get("X-Influxdb-Version"))
	})

	in.Exec(t, "CREATE DATABASE morse")

	t.Run("write and query back exactly", func(t *testing.T) {
		requireWrite(t, in.Write(t, "morse",
			`cpu,host=a,region=eu f=1.5,i=-3i,s="hi \"x\"",b=true 1600000000000000001`+"\n"), 204, "")
		got := in.Query(t, "morse", "SELECT * FROM cpu")
		require.Equal(t, []influxquery.Result{{
			StatementID: 0,
			Series: []influxquery.Series{{
				Name:    "cpu",
				Columns: []string{"time", "b", "f", "host", "i", "region", "s"},
				Values:  [][]any{{int64(1600000000000000001), true, 1.5, "a", int64(-3), "eu", `hi "x"`}},
			}},
		}}, got)
	})

	// The answers that testdata/influxdb/classifier.md classifies, from a real 1.6.7.
	t.Run("missing database", func(t *testing.T) {
		requireWrite(t, in.Write(t, "nope", "m v=1 1\n"),
			404, `database not found: "nope"`)
	})

	t.Run("string into float field", func(t *testing.T) {
		requireWrite(t, in.Write(t, "morse", "m v=1 1\n"), 204, "")
		requireWrite(t, in.Write(t, "morse", `m v="x" 2`+"\n"),
			400, `partial write: field type conflict: input field "v" on measurement "m" is type string, already exists as type float dropped=1`)
	})

	t.Run("type conflict among good points stores the good ones", func(t *testing.T) {
		requireWrite(t, in.Write(t, "morse", "tc v=1 1\ntc v=\"x\" 2\ntc v=3 3\n"),
			400, `partial write: field type conflict: input field "v" on measurement "tc" is type string, already exists as type float dropped=1`)
		got := in.Query(t, "morse", "SELECT v FROM tc")
		require.Equal(t, [][]any{{int64(1), 1.0}, {int64(3), 3.0}}, got[0].Series[0].Values)
	})

	t.Run("timestamp older than the retention policy", func(t *testing.T) {
		in.Exec(t, "CREATE DATABASE short WITH DURATION 1h")
		requireWrite(t, in.Write(t, "short", "m v=1 1000000000\n"),
			400, `partial write: points beyond retention policy dropped=1`)
	})

	t.Run("malformed line among valid ones", func(t *testing.T) {
		requireWrite(t, in.Write(t, "morse", "p v=1 1\np v=2 garbage\np v=3 3\n"),
			400, `partial write: unable to parse 'p v=2 garbage': bad timestamp dropped=0`)
		got := in.Query(t, "morse", "SELECT v FROM p")
		require.Equal(t, [][]any{{int64(1), 1.0}, {int64(3), 3.0}}, got[0].Series[0].Values,
			"the valid lines around the malformed one are stored")
	})

	t.Run("several malformed lines among valid ones", func(t *testing.T) {
		// dropped counts only points the engine refused, never unparsable
		// lines: one "unable to parse" clause per rejected line.
		requireWrite(t, in.Write(t, "morse", "pp v=1 1\npp v=2 x\npp v=3 3\npp v=4 y\npp v=5 5\n"),
			400, "partial write: unable to parse 'pp v=2 x': bad timestamp\nunable to parse 'pp v=4 y': bad timestamp dropped=0")
		got := in.Query(t, "morse", "SELECT count(v) FROM pp")
		require.Equal(t, [][]any{{int64(0), int64(3)}}, got[0].Series[0].Values)
	})

	t.Run("malformed line and type conflict in one batch", func(t *testing.T) {
		// Only the type conflict is reported: the parse error is not
		// mentioned and dropped=1, although two lines were rejected.
		requireWrite(t, in.Write(t, "morse", "mx v=1 1\nmx v=\"s\" 2\nmx v=3 x\nmx v=4 4\n"),
			400, `partial write: field type conflict: input field "v" on measurement "mx" is type string, already exists as type float dropped=1`)
		got := in.Query(t, "morse", "SELECT v FROM mx")
		require.Equal(t, [][]any{{int64(1), 1.0}, {int64(4), 4.0}}, got[0].Series[0].Values)
	})

	t.Run("missing field value among valid ones", func(t *testing.T) {
		requireWrite(t, in.Write(t, "morse", "q v=1 1\nq v= 2\n"),
			400, `partial write: unable to parse 'q v= 2': missing field value dropped=0`)
	})

	t.Run("only malformed lines", func(t *testing.T) {
		requireWrite(t, in.Write(t, "morse", "m v=1 garbage\n"),
			400, `unable to parse 'm v=1 garbage': bad timestamp`)
		requireWrite(t, in.Write(t, "morse", "m v=1 garbage\nm v=2 garbage2\n"),
			400, "unable to parse 'm v=1 garbage': bad timestamp\nunable to parse 'm v=2 garbage2': bad timestamp")
	})

	t.Run("missing db parameter", func(t *testing.T) {
		requireWrite(t, in.WriteParams(t, url.Values{}, "m v=1 1\n"),
			400, `database is required`)
	})

	t.Run("pause makes the server hang, unpause brings it back", func(t *testing.T) {
		short := &http.Client{Timeout: 300 * time.Millisecond}
		in.Pause(t)
		// The port proxy still accepts the connection; the frozen server
		// never answers, as with a hung sink.
		_, err := short.Get(in.URL() + "/ping")
		require.Error(t, err)
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "want a timeout, got %v", err)

		in.Unpause(t)
		require.Eventually(t, func() bool {
			resp, err := short.Get(in.URL() + "/ping")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusNoContent
		}, 10*time.Second, 20*time.Millisecond)
		requireWrite(t, in.Write(t, "morse", "after_pause v=1 1\n"), 204, "")
	})
}

func TestInfluxDBLimits(t *testing.T) {
	start := time.Now()
	in := StartInfluxDB(t, InfluxOptions{MaxValuesPerTag: 2, CacheMaxMemorySize: "1k"})
	t.Logf("container ready at %s in %s", in.URL(), time.Since(start))
	in.Exec(t, "CREATE DATABASE lim")

	t.Run("max-values-per-tag", func(t *testing.T) {
		requireWrite(t, in.Write(t, "lim", "m,t=a v=1 1\nm,t=b v=2 2\n"), 204, "")
		requireWrite(t, in.Write(t, "lim", "m,t=a v=11 11\nm,t=b v=12 12\nm,t=c v=13 13\nm,t=a v=14 14\nm,t=b v=15 15\n"),
			400, `partial write: max-values-per-tag limit exceeded (2/2): measurement="m" tag="t" value="c" dropped=1`)
		// A quirk of the real 1.6.7 (inmem index), same on every run: the
		// answer says dropped=1, yet besides c@13 the valid a@11 is lost too.
		got := in.Query(t, "lim", "SELECT v FROM m WHERE time > 10")
		require.Equal(t, [][]any{{int64(12), 12.0}, {int64(14), 14.0}, {int64(15), 15.0}}, got[0].Series[0].Values)
	})

	t.Run("write cache full", func(t *testing.T) {
		// The limit is per shard: a database of its own keeps the sizes
		// independent of the other subtests.
		in.Exec(t, "CREATE DATABASE cache")
		var b strings.Builder
		for i := 1; i <= 100; i++ {
			b.WriteString("big v=1 " + strconv.Itoa(i) + "\n")
		}
		requireWrite(t, in.Write(t, "cache", b.String()),
			500, `engine: cache-max-memory-size exceeded: (1600/1024)`)
		got := in.Query(t, "cache", "SELECT count(v) FROM big")
		require.Equal(t, []influxquery.Result{{StatementID: 0}}, got, "nothing of the rejected batch is stored")
	})
}
