package file

import (
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// decode reads the body of an [[inputs.file]] table as the loader does.
func decode(t *testing.T, body string) *File {
	t.Helper()
	f := New()
	md, err := toml.Decode(body, f)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, f.Validate())
	return f
}

// TestJSONFormats reads files in Telegraf's data_format "json" and "json_v2", configured
// as a Telegraf user writes them: a bad object is reported with its file, line and column
// while the good ones are kept (json_strict = false).
func TestJSONFormats(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	write(t, path, "{\"obj\": {\"list\": [\n  {\"host\": \"a\", \"v\": 1, \"t\": \"1700000000\"},\n  {\"host\": \"b\", \"v\": 2}\n]}}\n")

	f := decode(t, `files = ["`+path+`"]
data_format = "json"
json_query = "obj.list"
tag_keys = ["host"]
json_time_key = "t"
json_time_format = "unix"
json_strict = false`)
	acc := gather(t, f)
	require.Equal(t, []string{"file,host=a v=float:1 1700000000000000000"}, testutil.Canon(acc.Metrics()))
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], `1 entries refused: line 3, column 3: json_time_key not found: "t"`)

	f = decode(t, `files = ["`+path+`"]
data_format = "json_v2"
[[json_v2]]
  measurement_name = "hosts"
  [[json_v2.object]]
    path = "obj.list"
    tags = ["host"]
    excluded_keys = ["t"]`)
	acc = gather(t, f)
	require.Equal(t, []string{"hosts,host=a v=float:1 0", "hosts,host=b v=float:2 0"}, testutil.Canon(zeroTime(acc.Metrics())))
	require.Empty(t, acc.Errors())
}
