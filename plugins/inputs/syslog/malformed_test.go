package syslog

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// messagesOf is the message field of each metric, in order.
func (st *started) messagesOf() []string {
	var out []string
	for _, m := range st.acc.Metrics() {
		v, _ := m.Field("message")
		out = append(out, v.Str())
	}
	return out
}

// errorsOf is the text of each reported error, in order.
func (st *started) errorsOf() []string {
	var out []string
	for _, err := range st.acc.Errors() {
		out = append(out, err.Error())
	}
	return out
}

// TestMalformedMessagesAreCountedAndTheRestKept: on one connection, a message that does
// not parse is counted as malformed and reported with its offset in the stream and the
// parser's column, and the messages after it are still read (Telegraf stops reading the
// connection at the first bad message). A length that is not a number is a framing error;
// reading goes on from the next line feed. A message over max_message_length is skipped by
// its length.
func TestMalformedMessagesAreCountedAndTheRestKept(t *testing.T) {
	st := start(t, `server = "tcp://127.0.0.1:0"
max_message_length = 64`)
	good := func(s string) string { m := "<13>1 - - - - - - " + s; return strconv.Itoa(len(m)) + " " + m }
	long := "<13>1 - - - - - - " + strings.Repeat("x", 80)
	in := good("one") + "7 <13>1 X" + good("two") + "x1 bad\n" + good("three") +
		strconv.Itoa(len(long)) + " " + long + good("four")
	st.send(t, in)
	require.Equal(t, []string{"one", "two", "three", "four"}, st.messagesOf())
	require.Equal(t, int64(1), st.count("malformed_messages"))
	require.Equal(t, int64(2), st.count("framing_errors"))
	require.Equal(t, int64(5), st.count("messages_received"))
	errs := st.errorsOf()
	require.Len(t, errs, 3)
	require.Contains(t, errs[0], "at byte 24: ")
	require.Contains(t, errs[0], "[col 6]")
	require.Contains(t, errs[1], `at byte 57: found 'x', expecting a MSGLEN`)
	require.Contains(t, errs[2], "message too long: 98 octets, max_message_length is 64")
}

// TestNonTransparentKeepsTheRestAndHandsOnAtOnce: under non-transparent framing with the
// NUL trailer, a bad message between good ones is counted and the others kept, a message
// continued past a trailer by a byte other than '<' stays one message, as in go-syslog,
// and a message is handed on when its trailer arrives, without waiting for the next one.
func TestNonTransparentKeepsTheRestAndHandsOnAtOnce(t *testing.T) {
	st := start(t, `server = "tcp://127.0.0.1:0"
framing = "non-transparent"
trailer = "NUL"`)
	c := st.dial(t)
	defer c.Close()
	_, err := c.Write([]byte("<13>1 - - - - - - one\x00<13>bad\x00<13>1 - - - - - - two\x00part\x00<13>1 - - - - - - three\x00"))
	require.NoError(t, err)
	st.wait(t, 3) // the connection stays open: "three" came with its trailer only
	require.Equal(t, []string{"one", "two\x00part", "three"}, st.messagesOf())
	require.Equal(t, int64(1), st.count("malformed_messages"))
	require.Len(t, st.errorsOf(), 1)
	require.Contains(t, st.errorsOf()[0], "at byte 22: ")
}
