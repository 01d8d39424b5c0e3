package file

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// TestCSVFormat reads two csv files, each with its header, at every gather, with
// csv_reset_mode left at "none": as in Telegraf, each file is parsed from its start by a
// parser of its own, so the second file and the second gather read their headers as
// headers, and a malformed row is reported with its position while the others are kept.
func TestCSVFormat(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.csv"), "host,load,time\nweb1,0.5,1700000000\nweb2,1.5,1700000001\n")
	write(t, filepath.Join(dir, "b.csv"), "host,load,time\ndb1,2,1700000002\ndb2,x\"y,1700000003\ndb3,3,1700000004\n")
	f := New()
	f.Files = []string{filepath.Join(dir, "*.csv")}
	f.DataFormat = "csv"
	f.CSV = dataformat.CSV{HeaderRowCount: 1, TagColumns: []string{"host"}, TimestampColumn: "time", TimestampFormat: "unix"}
	f.FileTag = "file"
	want := []string{
		"file,file=a.csv,host=web1 load=float:0.5 1700000000000000000",
		"file,file=a.csv,host=web2 load=float:1.5 1700000001000000000",
		"file,file=b.csv,host=db1 load=integer:2 1700000002000000000",
		"file,file=b.csv,host=db3 load=integer:3 1700000004000000000",
	}
	for range 2 {
		acc := gather(t, f)
		require.Equal(t, want, testutil.Canon(acc.Metrics()))
		require.Len(t, acc.Errors(), 1)
		require.ErrorContains(t, acc.Errors()[0], `b.csv", 1 entries refused: line 3, column 6: bare " in non-quoted-field: "db2,x\"y,1700000003"`)
	}
}
