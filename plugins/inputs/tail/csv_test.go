package tail

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// TestCSVLineByLine follows two csv files in data_format "csv": each file's first line is
// its own header (a parser per file, as in Telegraf), the lines after it are rows, a row
// completed by a later write is read once whole, and a malformed row is reported with the
// byte where it starts while the rows around it are kept.
func TestCSVLineByLine(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	appendTo(t, a)
	appendTo(t, b)
	tl := newTail(filepath.Join(dir, "*.csv"))
	tl.DataFormat = "csv"
	tl.CSV = dataformat.CSV{HeaderRowCount: 1, TagColumns: []string{"host"}, TimestampColumn: "time", TimestampFormat: "unix"}
	tl.PathTag = ""
	acc := &testutil.Accumulator{}
	w := manual(tl, acc)
	w.follow(a, false)
	w.follow(b, false)
	appendTo(t, a, "host,load,time\nweb1,0.5,1700000000\n")
	appendTo(t, b, "time,host,mem\n1700000001,db1,2")
	w.poll()
	appendTo(t, b, "0\n1700000002,db2,x\"y\n1700000004,db3,30\n")
	appendTo(t, a, "web2,1.5,1700000003\n")
	w.poll()
	w.closeAll()
	got := testutil.Canon(acc.Metrics())
	slices.Sort(got)
	require.Equal(t, []string{
		"tail,host=db1 mem=integer:20 1700000001000000000",
		"tail,host=db3 mem=integer:30 1700000004000000000",
		"tail,host=web1 load=float:0.5 1700000000000000000",
		"tail,host=web2 load=float:1.5 1700000003000000000",
	}, got)
	require.Len(t, acc.Errors(), 1)
	require.EqualError(t, acc.Errors()[0], `tail: 1 entries refused in "`+b+`": byte 32: line 1, column 17: bare " in non-quoted-field: "1700000002,db2,x\"y"`)
}
