package http_response

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// resultCodes are Telegraf's. address_error is not among them, so that Telegraf reports
// it with result_code 0; morse does the same.
var resultCodes = map[string]int{
	"success":                       0,
	"response_string_mismatch":      1,
	"body_read_error":               2,
	"connection_failed":             3,
	"timeout":                       4,
	"dns_error":                     5,
	"response_status_code_mismatch": 6,
}

func setResult(result string, fields map[string]any, tags map[string]string) {
	tags["result"] = result
	fields["result_type"] = result
	fields["result_code"] = resultCodes[result]
}

// failure names the result of a request that got no answer.
func failure(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) && errors.As(ue, &oe) {
		var dnsErr *net.DNSError
		var parseErr *net.ParseError
		switch {
		case errors.As(oe, &dnsErr):
			return "dns_error"
		case errors.As(oe, &parseErr):
			return "address_error"
		}
	}
	return "connection_failed"
}

// probe requests one URL. Only a request that cannot be built is an error.
func (h *HTTPResponse) probe(ctx context.Context, c *http.Client, raw string) (map[string]any, map[string]string, error) {
	fields := map[string]any{}
	tags := map[string]string{"server": raw, "method": h.Method}
	req, err := h.request(ctx, raw)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	resp, err := c.Do(req)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		setResult(failure(err), fields, tags)
		return fields, tags, nil
	}
	defer resp.Body.Close()
	fields["response_time"] = elapsed
	for header, tag := range h.HTTPHeaderTags {
		if v := resp.Header[header]; len(v) > 0 {
			tags[tag] = v[0]
		}
	}
	tags["status_code"] = strconv.Itoa(resp.StatusCode)
	fields["http_response_code"] = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.ResponseBodyMaxSize)+1))
	switch {
	case err != nil, int64(len(body)) > int64(h.ResponseBodyMaxSize):
		h.bodyReadError(body, fields, tags)
		return fields, tags, nil
	case h.ResponseBodyField != "" && !utf8.Valid(body):
		h.bodyReadError(body, fields, tags)
		return fields, tags, nil
	case h.ResponseBodyField != "":
		fields[h.ResponseBodyField] = string(body)
	}
	fields["content_length"] = len(body)
	success := true
	if h.ResponseStringMatch != "" {
		fields["response_string_match"] = 1
		if !h.match.Match(body) {
			success = false
			setResult("response_string_mismatch", fields, tags)
			fields["response_string_match"] = 0
		}
	}
	if h.ResponseStatusCode > 0 {
		fields["response_status_code_match"] = 1
		if resp.StatusCode != h.ResponseStatusCode {
			success = false
			setResult("response_status_code_mismatch", fields, tags)
			fields["response_status_code_match"] = 0
		}
	}
	if success {
		setResult("success", fields, tags)
	}
	return fields, tags, nil
}

// bodyReadError is Telegraf's result of a body that could not be read, was too large or,
// for response_body_field, was not UTF-8.
func (h *HTTPResponse) bodyReadError(body []byte, fields map[string]any, tags map[string]string) {
	setResult("body_read_error", fields, tags)
	fields["content_length"] = len(body)
	if h.ResponseStringMatch != "" {
		fields["response_string_match"] = 0
	}
}

// request builds the request with the body, the token, the headers and basic auth.
func (h *HTTPResponse) request(ctx context.Context, raw string) (*http.Request, error) {
	var body io.Reader
	if h.Body != "" {
		body = strings.NewReader(h.Body)
	} else if len(h.BodyForm) > 0 {
		body = strings.NewReader(url.Values(h.BodyForm).Encode())
	}
	req, err := http.NewRequestWithContext(ctx, h.Method, raw, body)
	if err != nil {
		return nil, err
	}
	if _, ok := h.Headers["User-Agent"]; !ok {
		req.Header.Set("User-Agent", "morse")
	}
	switch {
	case h.Token.IsSet():
		req.Header.Add("Authorization", "Bearer "+strings.TrimSpace(string(h.Token)))
	case h.BearerToken != "":
		token, err := os.ReadFile(h.BearerToken)
		if err != nil {
			return nil, err
		}
		req.Header.Add("Authorization", "Bearer "+strings.Trim(string(token), "\n"))
	}
	for k, v := range h.Headers {
		req.Header.Add(k, v)
		if k == "Host" {
			req.Host = v
		}
	}
	if h.Username.IsSet() && h.Password.IsSet() {
		req.SetBasicAuth(string(h.Username), string(h.Password))
	}
	return req, nil
}
