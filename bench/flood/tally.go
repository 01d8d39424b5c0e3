package flood

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// tally follows the file the agent's outputs.file writes, as it grows, and counts what the
// input captured. Each StatsD flood line is a counter increment of 1 and the input clears
// its counters after every gather (delete_counters), so the sum of the `value` of every
// metric tagged metric_type=counter is exactly the number of lines the input aggregated;
// each syslog message is one metric named syslog.
// The agent's own counters (inputs.internal, measurements internal_*) are kept at their
// last value.
type tally struct {
	path string
	// measurement, when set, counts the metrics of that name instead of summing the
	// counters: "syslog", one metric per message.
	measurement string
	off         int64  // bytes of the file read so far
	rest        []byte // a last line not yet ended by its newline
	// Captured is the sum of the counters, Metrics the metrics read.
	Captured, Metrics int64
	// Refused counts the lines of the file that did not parse: a sign that the file was
	// read wrong, which would make Captured wrong too.
	Refused int64
	// Internal holds the last value of each field of the agent's own counters, keyed
	// "measurement field".
	Internal map[string]int64
}

func newTally(path, measurement string) *tally {
	return &tally{path: path, measurement: measurement, Internal: map[string]int64{}}
}

// update reads what the agent appended since the last call and counts its whole lines. A
// file not yet created counts as empty.
func (t *tally) update() error {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tally: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("tally: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("tally: %w", err)
	}
	t.off += int64(len(data))
	t.feed(data)
	return nil
}

// feed counts the whole lines of data, after what an earlier call left unfinished.
func (t *tally) feed(data []byte) {
	if len(t.rest) > 0 {
		data = append(t.rest, data...)
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	t.rest = append([]byte(nil), data[end:]...)
	if end == 0 {
		return
	}
	var p influx.Parser
	res := p.Parse(data[:end], t.add)
	t.Refused += int64(res.Errors)
}

func (t *tally) add(m morse.Metric) {
	t.Metrics++
	if strings.HasPrefix(m.Name(), "internal_") {
		for _, f := range m.Fields() {
			if v, ok := asInt(f.Value); ok {
				t.Internal[m.Name()+" "+f.Key] = v
			}
		}
		return
	}
	if t.measurement != "" {
		if m.Name() == t.measurement {
			t.Captured++
		}
		return
	}
	if typ, _ := m.Tag("metric_type"); typ != "counter" {
		return
	}
	if v, ok := m.Field("value"); ok {
		if n, ok := asInt(v); ok {
			t.Captured += n
		}
	}
}

func asInt(v morse.Value) (int64, bool) {
	switch v.Type() {
	case morse.TypeInt:
		return v.Int(), true
	case morse.TypeUint:
		return int64(v.Uint()), true
	case morse.TypeFloat:
		return int64(v.Float()), true
	}
	return 0, false
}
