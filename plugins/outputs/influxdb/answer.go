package influxdb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/morse-agent/morse/plugins/common/httpout"
)

// maxMessage bounds the part of an error message that is kept, for logs and for the error
// value. The rest of the message is still scanned, see readAnswer.
const maxMessage = httpout.MaxMessage

// answer is what a server said to one write: its status, headers and error message, plus
// the counts that the classifier needs.
type answer struct {
	status int
	header http.Header
	// msg is the error message: the "error" string of InfluxDB's JSON body (or "message" of
	// a 2.x-style body), else the body as text. Only its first maxMessage bytes are kept.
	msg string
	// parseErrors counts the "unable to parse '...'" clauses of the whole message, one per
	// line that InfluxDB could not parse. They are counted while streaming, because a batch
	// with many bad lines gets an answer far longer than maxMessage, and InfluxDB never
	// counts these lines in dropped=N.
	parseErrors int
	// dropped is N of the last " dropped=N" of the message, or -1.
	dropped int
	// v2 is set for a 2.x-style body ({"code":..,"message":..}): InfluxDB 2 on its 1.x
	// /write, which refuses a whole request when a line does not parse.
	v2 bool
	// truncated is set when the body was longer than the scan limit, so that parseErrors is
	// a lower bound.
	truncated bool
}

// readAnswer reads an answer body of at most limit bytes (limit <= 0: no limit), keeping
// maxMessage bytes of it in memory whatever its length.
func readAnswer(status int, header http.Header, body io.Reader, limit int64) answer {
	a := answer{status: status, header: header, dropped: -1}
	if limit > 0 {
		body = io.LimitReader(body, limit+1)
	}
	cr := &countingReader{r: body}
	br := bufio.NewReaderSize(cr, 4096)
	var s msgScanner
	prefix, _ := br.Peek(len(`{"error":"`))
	switch {
	case bytes.Equal(prefix, []byte(`{"error":"`)):
		// InfluxDB 1.x: decode the JSON string as it streams past.
		_, _ = br.Discard(len(prefix))
		decodeJSONString(br, &s)
	case len(prefix) > 0 && prefix[0] == '{':
		// Some other JSON shape, such as 2.x's {"code":..,"message":..}: small enough to
		// decode whole.
		b := httpout.ReadAnswer(br, maxMessage)
		var v struct{ Error, Message, Code string }
		if json.Unmarshal(b, &v) == nil && (v.Error != "" || v.Message != "") {
			s.writeString(v.Error + v.Message)
			a.v2 = v.Code != ""
		} else {
			s.writeString(string(bytes.TrimSpace(b)))
		}
	default:
		// Plain text, such as InfluxDB's throttling answers or a proxy's page.
		b := httpout.ReadAnswer(br, maxMessage)
		s.writeString(string(bytes.TrimSpace(b)))
	}
	_, _ = io.Copy(io.Discard, br) // drain, so that the connection can be reused
	s.finish()
	a.msg = string(s.head)
	a.parseErrors = s.parseErrors
	a.dropped = s.droppedN()
	a.truncated = limit > 0 && cr.n > limit
	return a
}

type countingReader struct {
	r io.Reader
	n int64
}

// Read counts what it reads.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// decodeJSONString decodes the rest of a JSON string (the opening quote already read) into s,
// stopping at the closing quote or at the end of the input.
func decodeJSONString(br *bufio.Reader, s *msgScanner) {
	for {
		c, err := br.ReadByte()
		if err != nil || c == '"' {
			return
		}
		if c != '\\' {
			s.writeByte(c)
			continue
		}
		e, err := br.ReadByte()
		if err != nil {
			return
		}
		switch e {
		case 'n':
			s.writeByte('\n')
		case 't':
			s.writeByte('\t')
		case 'r':
			s.writeByte('\r')
		case 'b':
			s.writeByte('\b')
		case 'f':
			s.writeByte('\f')
		case 'u':
			s.writeRune(readUnicodeEscape(br))
		default: // '"', '\\', '/'
			s.writeByte(e)
		}
	}
}

// readUnicodeEscape reads the XXXX of \uXXXX, and a following low surrogate when XXXX is a
// high one.
func readUnicodeEscape(br *bufio.Reader) rune {
	hex4 := func() rune {
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return utf8.RuneError
		}
		v, err := strconv.ParseUint(string(b[:]), 16, 16)
		if err != nil {
			return utf8.RuneError
		}
		return rune(v)
	}
	r := hex4()
	if r < 0xD800 || r > 0xDBFF {
		return r
	}
	if next, _ := br.Peek(2); !bytes.Equal(next, []byte(`\u`)) {
		return utf8.RuneError
	}
	_, _ = br.Discard(2)
	lo := hex4()
	if lo < 0xDC00 || lo > 0xDFFF {
		return utf8.RuneError
	}
	return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
}

// The clause InfluxDB writes for each line it cannot parse. Clauses are separated by
// newlines; the first one follows "partial write: " when some lines were parsed.
const (
	partialPrefix = "partial write: "
	parsePrefix   = "unable to parse '"
)

// msgScanner receives a decoded error message byte by byte. It keeps the head of the message,
// a short tail for "dropped=N", and counts the lines that start with an "unable to parse"
// clause, all in bounded memory.
type msgScanner struct {
	head        []byte
	tail        []byte
	line        []byte // the start of the current line, up to lineProbe bytes
	lines       int
	parseErrors int
}

// lineProbe is how much of a line decides whether it is a parse clause: the longest prefix
// looked for, "partial write: unable to parse '".
const lineProbe = len(partialPrefix) + len(parsePrefix)

// tailKeep is enough for " dropped=N" and what InfluxDB 2 puts after it (" for database:
// <id> for retention policy: <name>").
const tailKeep = 192

func (s *msgScanner) writeString(str string) {
	for i := 0; i < len(str); i++ {
		s.writeByte(str[i])
	}
}

func (s *msgScanner) writeRune(r rune) {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	for _, c := range b[:n] {
		s.writeByte(c)
	}
}

func (s *msgScanner) writeByte(c byte) {
	if len(s.head) < maxMessage {
		s.head = append(s.head, c)
	}
	if len(s.tail) == 2*tailKeep {
		s.tail = append(s.tail[:0], s.tail[tailKeep:]...)
	}
	s.tail = append(s.tail, c)
	if c == '\n' {
		s.endLine()
		return
	}
	if len(s.line) < lineProbe {
		s.line = append(s.line, c)
	}
}

// endLine decides whether the line that just ended started with a parse clause.
func (s *msgScanner) endLine() {
	line := s.line
	if s.lines == 0 {
		line = bytes.TrimPrefix(line, []byte(partialPrefix))
	}
	if bytes.HasPrefix(line, []byte(parsePrefix)) {
		s.parseErrors++
	}
	s.lines++
	s.line = s.line[:0]
}

func (s *msgScanner) finish() {
	if len(s.line) > 0 || s.lines == 0 {
		s.endLine()
	}
}

// droppedN returns N of the last " dropped=N" near the end of the message, or -1. InfluxDB 1.x
// ends its message with it; InfluxDB 2 follows it with the database and retention policy.
func (s *msgScanner) droppedN() int {
	i := bytes.LastIndex(s.tail, []byte(" dropped="))
	if i < 0 {
		return -1
	}
	digits := s.tail[i+len(" dropped="):]
	end := 0
	for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(string(digits[:end]))
	if err != nil || end < len(digits) && digits[end] != ' ' && digits[end] != '\n' {
		return -1
	}
	return n
}
