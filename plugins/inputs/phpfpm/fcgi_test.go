package phpfpm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The real pools (phpfpm_test.go) answer every request with one request ID, short records
// and a complete END_REQUEST. These hand-written answers are what they cannot be made to
// send: records of another request, a refusal, a cut stream, an endless one.

// record is one encoded record of request id.
func record(typ byte, id uint16, content string) []byte {
	var b bytes.Buffer
	writeRecord(&b, typ, []byte(content))
	out := b.Bytes()
	out[2], out[3] = byte(id>>8), byte(id)
	return out
}

func endRequest(appStatus byte, protocolStatus byte) string {
	return string([]byte{0, 0, 0, appStatus, protocolStatus, 0, 0, 0})
}

func TestReadResponseSkipsOtherRequests(t *testing.T) {
	in := bytes.Join([][]byte{
		record(typeStdout, 2, "not ours"),
		record(typeStdout, 1, "Status: 200 OK\r\n\r\n"),
		record(typeStderr, 1, "a warning"),
		record(typeStdout, 1, "pool: www\n"), // 10 bytes: 6 of padding follow
		record(typeEndRequest, 2, endRequest(9, 0)),
		record(typeEndRequest, 1, endRequest(3, 0)),
	}, nil)
	resp, err := readResponse(bytes.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, "Status: 200 OK\r\n\r\npool: www\n", string(resp.stdout))
	require.Equal(t, "a warning", string(resp.stderr))
	require.Equal(t, uint32(3), resp.appStatus)
}

func TestReadResponseErrors(t *testing.T) {
	full := record(typeStdout, 1, strings.Repeat("x", maxContent))
	for name, c := range map[string]struct {
		in   []byte
		want string
	}{
		"overloaded": {record(typeEndRequest, 1, endRequest(0, 2)), "the FastCGI server refused the request: overloaded (2)"},
		"cut header": {record(typeStdout, 1, "abc")[:5], "reading the FastCGI answer: unexpected EOF"},
		"cut body":   {record(typeStdout, 1, "abcdef")[:10], "reading the FastCGI answer: unexpected EOF"},
		"no end":     {record(typeStdout, 1, "abc"), "reading the FastCGI answer: unexpected EOF"},
		"short end":  {record(typeEndRequest, 1, "1234"), "reading the FastCGI answer: short END_REQUEST"},
		"endless":    {bytes.Repeat(full, maxResponse/maxContent+2), "the FastCGI answer is over 16777216 bytes"},
	} {
		_, err := readResponse(bytes.NewReader(c.in))
		require.EqualError(t, err, c.want, name)
	}
}

// TestEncodeRequest: BEGIN_REQUEST as a responder, the pairs with one- and four-byte
// lengths, and the empty PARAMS and STDIN that end the streams, each record padded to 8.
func TestEncodeRequest(t *testing.T) {
	long := strings.Repeat("v", 200)
	req, err := encodeRequest([]param{{"A", "b"}, {"LONG", long}})
	require.NoError(t, err)
	pairs := "\x01\x01Ab" + "\x04\x80\x00\x00\xc8LONG" + long
	want := bytes.Join([][]byte{
		record(typeBeginRequest, 1, "\x00\x01\x00\x00\x00\x00\x00\x00"),
		record(typeParams, 1, pairs),
		record(typeParams, 1, ""),
		record(typeStdin, 1, ""),
	}, nil)
	require.Equal(t, want, req)
	require.Zero(t, len(req)%8)
}

func TestSplitCGI(t *testing.T) {
	status, body, err := splitCGI([]byte("Content-type: text/plain\r\nStatus: 404 Not Found\r\n\r\nFile not found.\n"))
	require.NoError(t, err)
	require.Equal(t, "404 Not Found", status)
	require.Equal(t, "File not found.\n", string(body))
	status, body, err = splitCGI([]byte("Content-type: text/plain\n\npool: www\n"))
	require.NoError(t, err)
	require.Equal(t, "200 OK", status)
	require.Equal(t, "pool: www\n", string(body))
	_, _, err = splitCGI([]byte("pool: www\n"))
	require.Error(t, err)
}
