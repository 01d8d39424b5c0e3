package redis

import (
	"fmt"
	"strconv"
)

// convertAnswer converts a command's answer as go-redis' Int64, Text and Float64 do for
// Telegraf: integers and numeric texts to the type asked for, anything else an error.
func convertAnswer(ans any, typ string) (any, error) {
	switch typ {
	case "integer":
		switch v := ans.(type) {
		case int64:
			return v, nil
		case string:
			return strconv.ParseInt(v, 10, 64)
		}
	case "float":
		switch v := ans.(type) {
		case int64:
			return float64(v), nil
		case string:
			return strconv.ParseFloat(v, 64)
		}
	default:
		if v, ok := ans.(string); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("redis: unexpected type=%T for %s", ans, typ)
}
