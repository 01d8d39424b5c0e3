package kernel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// gatherPressure reports one pressure metric per resource and type. cpu "full" is left
// out, as Telegraf leaves it out: it is always zero at the system level.
func gatherPressure(acc morse.Accumulator, dir string, now time.Time) error {
	for _, resource := range []string{"cpu", "memory", "io"} {
		path := filepath.Join(dir, resource)
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("failed to read %s pressure: %w", resource, err)
		}
		lines, err := parsePressure(data)
		if err != nil {
			return fmt.Errorf("failed to read %s pressure: parsing %q: %w", resource, path, err)
		}
		for _, typ := range []string{"some", "full"} {
			fields, ok := lines[typ]
			if !ok || (resource == "cpu" && typ == "full") {
				continue
			}
			tags := []morse.Tag{{Key: "resource", Value: resource}, {Key: "type", Value: typ}}
			acc.AddMetric(morse.NewMetric("pressure", tags, fields, now))
		}
	}
	return nil
}

// parsePressure reads a /proc/pressure file: lines like
// "some avg10=0.00 avg60=0.00 avg300=0.00 total=0", keyed by their first word.
func parsePressure(data []byte) (map[string][]morse.Field, error) {
	out := map[string][]morse.Field{}
	for line := range bytes.Lines(data) {
		words := strings.Fields(string(line))
		if len(words) == 0 {
			continue
		}
		fields := make([]morse.Field, 0, 4)
		for _, w := range words[1:] {
			key, val, ok := strings.Cut(w, "=")
			if !ok {
				return nil, fmt.Errorf("malformed item %q", w)
			}
			switch key {
			case "avg10", "avg60", "avg300":
				f, err := strconv.ParseFloat(val, 64)
				if err != nil {
					return nil, fmt.Errorf("malformed %s: %w", key, err)
				}
				fields = append(fields, morse.Field{Key: key, Value: morse.Float(f)})
			case "total":
				u, err := strconv.ParseUint(val, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("malformed total: %w", err)
				}
				// procfs's uint64, which Telegraf adds as it is.
				fields = append(fields, morse.Field{Key: "total", Value: morse.Uint(u)})
			}
		}
		out[words[0]] = fields
	}
	return out, nil
}
