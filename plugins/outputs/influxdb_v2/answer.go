package influxdbv2

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/morse-agent/morse/plugins/common/httpout"
)

// maxMessage bounds the part of an error message that is kept, for logs and errors.
const maxMessage = httpout.MaxMessage

// answer is what a server said to one write.
type answer struct {
	status int
	header http.Header
	// code is the "code" of the v2 API's JSON error body: "invalid", "not found", ...
	code string
	// msg is the "message" of that body, or the "error" of an InfluxDB 1.x or 3 body, or
	// else the body as text; at most maxMessage bytes.
	msg string
	// lineErrors counts the entries of an InfluxDB 3 partial write's "data", one per line
	// it rejected; -1 when the body had none (or was too long to read whole).
	lineErrors int
	// rejected are those entries, one per distinct line number, in the server's order, so
	// that each line is counted under its own reason and at its own position.
	rejected []lineError
}

// lineError is one entry of InfluxDB 3's "data": a line it rejected.
type lineError struct {
	ErrorMessage string `json:"error_message"`
	LineNumber   int    `json:"line_number"`
}

// answerLimit bounds how much of an answer is read for a body of n bytes of line protocol:
// InfluxDB 3 lists every line it rejected, with its message and at most 20 bytes of the
// line, and InfluxDB 1.x quotes each line it could not parse. An honest answer is shorter but
// for the shortest lines; one cut short is read as a partial write without a count, which
// the output then counts itself.
func answerLimit(n int) int64 { return maxMessage + 16*int64(n) }

// readAnswer reads an answer body of at most limit bytes (the rest is drained, so that the
// connection can be reused), and decodes the error bodies that InfluxDB servers send.
func readAnswer(status int, header http.Header, body io.Reader, limit int64) answer {
	a := answer{status: status, header: header, lineErrors: -1}
	if status/100 == 2 {
		httpout.ReadAnswer(body, 0)
		return a
	}
	b := bytes.TrimSpace(httpout.ReadAnswer(body, limit+1))
	var v struct {
		Code    string      `json:"code"`
		Message string      `json:"message"`
		Error   string      `json:"error"`
		Data    []lineError `json:"data"`
	}
	if len(b) > 0 && b[0] == '{' && int64(len(b)) <= limit && json.Unmarshal(b, &v) == nil {
		a.code = v.Code
		a.msg = clip(v.Message + v.Error)
		if v.Data != nil {
			a.rejected = distinctLines(v.Data)
			a.lineErrors = len(a.rejected)
		}
		return a
	}
	a.msg = clip(string(b))
	// InfluxDB 2 also names the code in a header (kit/transport/http/error_handler.go),
	// which counts when the body could not be read as JSON.
	a.code = header.Get("X-Platform-Error-Code")
	return a
}

// distinctLines keeps the first entry of each line of InfluxDB 3's list: a line is listed
// once, but keeping line numbers distinct keeps a line listed twice from being counted
// twice.
func distinctLines(data []lineError) []lineError {
	seen := make(map[int]struct{}, len(data))
	out := data[:0]
	for _, e := range data {
		if _, dup := seen[e.LineNumber]; dup {
			continue
		}
		seen[e.LineNumber] = struct{}{}
		e.ErrorMessage = clip(e.ErrorMessage)
		out = append(out, e)
	}
	return out
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "")
}
