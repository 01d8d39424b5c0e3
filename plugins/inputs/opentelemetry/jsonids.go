package opentelemetry

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// OTLP JSON writes the trace and span IDs of exemplars in hex, where the protobuf JSON
// mapping that protojson reads has bytes in base64; read as base64, a 32-digit trace ID
// decodes without error to 24 wrong bytes. jsonIDsToBase64 rewrites them before protojson
// reads the body. Only bodies that name an ID pay for the rewrite.

// idKeys are the JSON names of the ID fields, in lowerCamelCase and as in the .proto, both
// of which a receiver reads.
var idKeys = map[string]bool{"traceId": true, "spanId": true, "trace_id": true, "span_id": true}

// jsonIDsToBase64 returns body with every hex ID field rewritten in base64; body itself when
// it names none. A value that is not hex is left for protojson to judge.
func jsonIDsToBase64(body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte("Id\"")) && !bytes.Contains(body, []byte("_id\"")) {
		return body, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // 64-bit integers keep their digits
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if !rewriteIDs(v) {
		return body, nil
	}
	return json.Marshal(v)
}

// rewriteIDs rewrites the hex IDs under v in place and reports whether it changed any.
func rewriteIDs(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && idKeys[k] {
				if b, err := hex.DecodeString(s); err == nil {
					v[k] = base64.StdEncoding.EncodeToString(b)
					changed = true
				}
				continue
			}
			changed = rewriteIDs(e) || changed
		}
	case []any:
		for _, e := range v {
			changed = rewriteIDs(e) || changed
		}
	}
	return changed
}
