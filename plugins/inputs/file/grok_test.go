package file

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// TestGrokFormat reads an Apache access log with data_format "grok" as a Telegraf config
// writes it: each line that the pattern matches is a metric named after the input, with
// Telegraf's tags and typed fields and the log's time; a line that does not match is
// reported with its line number and the others are kept.
func TestGrokFormat(t *testing.T) {
	path := write(t, filepath.Join(t.TempDir(), "access.log"), ""+
		`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "-" "Mozilla"`+"\n"+
		"not an access log line\n"+
		`::1 - - [10/Oct/2000:13:55:37 -0700] "POST /write HTTP/1.1" 204 - "http://a/" "curl/8.5.0"`+"\n")
	f := New()
	md, err := toml.Decode(fmt.Sprintf(`
files = [%q]
data_format = "grok"
grok_patterns = ["%%{COMBINED_LOG_FORMAT}"]
grok_timezone = "UTC"
grok_unique_timestamp = "auto"`, path), f)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	acc := gather(t, f)
	require.Equal(t, []string{
		`file,resp_code=200,verb=GET client_ip=string:"127.0.0.1",ident=string:"-",auth=string:"frank",request=string:"/apache_pb.gif",http_version=float:1,resp_bytes=integer:2326,referrer=string:"-",agent=string:"Mozilla" 971211336000000000`,
		`file,resp_code=204,verb=POST client_ip=string:"::1",ident=string:"-",auth=string:"-",request=string:"/write",http_version=float:1.1,referrer=string:"http://a/",agent=string:"curl/8.5.0" 971211337000000000`,
	}, testutil.Canon(acc.Metrics()))
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], `access.log", 1 entries refused: line 2: matches no grok pattern: "not an access log line"`)
}
