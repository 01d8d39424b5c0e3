package influx

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// parsed is everything a parse produced, for comparing the fast path with the reference.
type parsed struct {
	Points               []fuzzPoint
	Lines, Metrics, Errs int
	Kept                 []string // the kept errors, with their line numbers
}

func parseWith(data []byte, reference bool) (parsed, Result) {
	p := &Parser{Now: func() time.Time { return fuzzNow }, reference: reference}
	var out parsed
	res := p.Parse(data, func(m morse.Metric) { out.Points = append(out.Points, pointOf(m)) })
	out.Lines, out.Metrics, out.Errs = res.Lines, res.Metrics, res.Errors
	for _, e := range res.Errs {
		out.Kept = append(out.Kept, fmt.Sprintf("%d: %s", e.Line, e.Error()))
	}
	return out, res
}

// streamWith parses data as a stream that arrives chunk bytes at a time, so that entries are
// cut at every possible place and the fast path must hand them to the splitter.
func streamWith(t *testing.T, data []byte, chunk int) parsed {
	t.Helper()
	p := &Parser{Now: func() time.Time { return fuzzNow }}
	var out parsed
	err := p.ParseReader(&chunkReader{r: bytes.NewReader(data), n: chunk},
		func(m morse.Metric) { out.Points = append(out.Points, pointOf(m)); out.Metrics++ },
		func(e LineError) {
			out.Errs++
			if len(out.Kept) < MaxKeptErrors {
				out.Kept = append(out.Kept, fmt.Sprintf("%d: %s", e.Line, e.Error()))
			}
		})
	require.NoError(t, err)
	out.Lines = out.Metrics + out.Errs
	return out
}

type chunkReader struct {
	r *bytes.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// differentialEntries are valid and invalid entries that the fast path and line metrics
// must judge exactly as the reference path does: escapes, every value type at its bounds,
// tag order and duplicates, line endings, comments, and entries cut short.
var differentialEntries = []string{
	"cpu,host=a,region=eu usage=1.5,n=2i,u=3u,ok=true,s=\"x\" 1700000000000000000\n",
	"m v=1\nm v=2 \nm v=3 5  \nm  v=4\nm,a=b  v=5\n",
	"m v=1", "m v=1 ", "m v=1 12", "m v=\"x\"",
	"app\\ events,path=/a\\ b\\,c\\=d,k\\=ey=v v=1\n",
	"a\\\\ b v=1\n", "a\\x,t=\\q v=\"\\q\\\\\\\"\\n\\r\\t\" 1\n", "m s=\"a\\\\b\\\"c\" 1\n",
	"m,t=é v=\"ünï\" 1\n", "m,t=\xff v=1\n", "m v=\"\xc3\" 1\n",
	"m v=t,w=T,x=true,y=False,z=FALSE,q=tru\n",
	"m v=-1.5e3,w=.5,x=1.,y=-,z=1e\n", "m v=1e400\n", "m v=01.5,w=0.5,x=-0.25e-3\n",
	"m v=9223372036854775808i\n", "m v=-9223372036854775808i\n", "m v=007i\n",
	"m v=-1u\n", "m v=18446744073709551615u\n", "m v=18446744073709551616u\n",
	"m v=9223372036854775807u,w=9223372036854775808u\n",
	"m v=1 99999999999999999999\n", "m v=1 12a\n", "m v=1 -\n", "m v=1 1 2\n",
	"m,b=2,a=1 v=1\n", "m,a=1,a=2 v=1\n", "m,a= v=1\n", "m,=a v=1\n", "m, v=1\n",
	"m,a=b=c v=1\n", "m v=1,\n", "m v=\n", "m v\n", "m =1\n", "m\n", ",m v=1\n",
	"m v=1\r\nm v=2\r\n", "m v=1\rx\n", "# comment\n  \n\nm v=1\n#x\n",
	"m v=\"a\nb\" 1\nm v=2\n", "m\tv=1\n", "m v=1\x00\n", "m v=1i,v=2\n",
	"m v=\"unterminated\n", "m,a=b\n", "m\\", "m v=1\\\n",
}

// TestFastPathMatchesReference: for valid and invalid entries alike, the fast path gives what
// the reference path gives, metric for metric and error for error, with the same line numbers.
func TestFastPathMatchesReference(t *testing.T) {
	for _, in := range differentialEntries {
		data := []byte(in)
		fast, _ := parseWith(data, false)
		ref, _ := parseWith(data, true)
		require.Equal(t, ref, fast, "input %q", in)
		for _, chunk := range []int{1, 3, 7} {
			require.Equal(t, ref, streamWith(t, data, chunk), "input %q in chunks of %d", in, chunk)
		}
	}
}

// realisticLines is what senders send, in the shapes of morse-bench load: escaped tag values and
// measurement names, strings with quotes and backslashes, every value type, non-ASCII text.
func realisticLines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "cpu,cpu=cpu%d,host=web-%03d.prod usage_user=%d.25,usage_idle=91.5 %d\n", i%8, i%1000, i%100, 1700000000000000000+int64(i))
		case 1:
			fmt.Fprintf(&b, "app\\ events,host=h%d,path=/a\\ b\\,c\\=d,region=eu\\ west msg=\"said \\\"hi\\\" to C:\\\\tmp ünï\",n=%di,u=%du,ok=true %d\n", i, i, i, 1700000000000000000+int64(i))
		case 2:
			fmt.Fprintf(&b, "net,host=h%d,interface=eth0 bytes_recv=%du,err_in=0i,up=F\n", i, i*1000)
		default:
			fmt.Fprintf(&b, "disk,device=nvme0n1p%d,fstype=ext4,mode=rw used_percent=%d.41234567,free=214748364800u,inodes_used=%di %d\n", i%4, i%100, i, 1700000000000000000+int64(i))
		}
	}
	return b.Bytes()
}

// TestFastPathTakesRealisticLines: the lines senders really send take the fast path, every
// one of them, and come out as the reference path makes them. A fast path that bailed on
// them would still be correct but would cost what it exists to save.
func TestFastPathTakesRealisticLines(t *testing.T) {
	data := realisticLines(400)
	fast, res := parseWith(data, false)
	ref, _ := parseWith(data, true)
	require.Equal(t, ref, fast)
	require.Zero(t, res.Errors)
	require.Equal(t, 400, res.fast, "every realistic line takes the fast path")

	// In a stream, only an entry cut by the end of a read goes the reference way.
	streamed := streamWith(t, data, 4096)
	require.Equal(t, ref, streamed)
}
