package phpfpm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// statusFields are the pool's lines of the text page that Telegraf reports, as integers
// named with underscores for spaces.
var statusFields = map[string]string{
	"start since":          "start_since",
	"accepted conn":        "accepted_conn",
	"listen queue":         "listen_queue",
	"max listen queue":     "max_listen_queue",
	"listen queue len":     "listen_queue_len",
	"idle processes":       "idle_processes",
	"active processes":     "active_processes",
	"total processes":      "total_processes",
	"max active processes": "max_active_processes",
	"max children reached": "max_children_reached",
	"slow requests":        "slow_requests",
}

// parseStatus reads the text page, "name: value" lines, one phpfpm metric per "pool:" line
// with the integer fields that follow it. A full page's worker blocks, after a line of
// asterisks, are not the pool's: Telegraf would let a worker's "start since" overwrite the
// pool's; here it does not.
func parseStatus(page []byte, addr string, now time.Time, acc morse.Accumulator) error {
	var pools []string
	stats := map[string]map[string]any{}
	var fields map[string]any // the current pool's, nil in a worker block
	sc := bufio.NewScanner(bytes.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "*") {
			fields = nil
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name == "pool" {
			if _, seen := stats[value]; !seen {
				pools = append(pools, value)
				stats[value] = map[string]any{}
			}
			fields = stats[value]
			continue
		}
		key, known := statusFields[name]
		if fields == nil || !known {
			continue
		}
		// Like Telegraf, a value that is not an integer is left out.
		if v, err := strconv.ParseInt(value, 10, 64); err == nil {
			fields[key] = v
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(pools) == 0 {
		return errors.New("no \"pool:\" line: not a status page")
	}
	for _, pool := range pools {
		if len(stats[pool]) > 0 {
			acc.AddFields("phpfpm", stats[pool], tags("pool", pool, "url", addr), now)
		}
	}
	return nil
}

// jsonPage is the ?json page, with Telegraf's Go types: numbers it reads as int are
// integers, the two last-request measures floats.
type jsonPage struct {
	Pool               string `json:"pool"`
	StartSince         int64  `json:"start since"`
	AcceptedConn       int64  `json:"accepted conn"`
	ListenQueue        int64  `json:"listen queue"`
	MaxListenQueue     int64  `json:"max listen queue"`
	ListenQueueLen     int64  `json:"listen queue len"`
	IdleProcesses      int64  `json:"idle processes"`
	ActiveProcesses    int64  `json:"active processes"`
	TotalProcesses     int64  `json:"total processes"`
	MaxActiveProcesses int64  `json:"max active processes"`
	MaxChildrenReached int64  `json:"max children reached"`
	SlowRequests       int64  `json:"slow requests"`
	Processes          []struct {
		Pid               int64   `json:"pid"`
		State             string  `json:"state"`
		StartTime         int64   `json:"start time"`
		Requests          int64   `json:"requests"`
		RequestDuration   int64   `json:"request duration"`
		RequestMethod     string  `json:"request method"`
		RequestURI        string  `json:"request uri"`
		ContentLength     int64   `json:"content length"`
		User              string  `json:"user"`
		Script            string  `json:"script"`
		LastRequestCPU    float64 `json:"last request cpu"`
		LastRequestMemory float64 `json:"last request memory"`
	} `json:"processes"`
}

// parseJSON reads the ?json page (?json&full lists the workers): phpfpm with every pool
// field, a missing one 0 as in Telegraf, and phpfpm_process per worker.
func parseJSON(page []byte, addr string, now time.Time, acc morse.Accumulator) error {
	var p jsonPage
	if err := json.Unmarshal(page, &p); err != nil {
		return err
	}
	acc.AddFields("phpfpm", map[string]any{
		"start_since":          p.StartSince,
		"accepted_conn":        p.AcceptedConn,
		"listen_queue":         p.ListenQueue,
		"max_listen_queue":     p.MaxListenQueue,
		"listen_queue_len":     p.ListenQueueLen,
		"idle_processes":       p.IdleProcesses,
		"active_processes":     p.ActiveProcesses,
		"total_processes":      p.TotalProcesses,
		"max_active_processes": p.MaxActiveProcesses,
		"max_children_reached": p.MaxChildrenReached,
		"slow_requests":        p.SlowRequests,
	}, tags("pool", p.Pool, "url", addr), now)
	for _, w := range p.Processes {
		acc.AddFields("phpfpm_process", map[string]any{
			"pid":                 w.Pid,
			"state":               w.State,
			"start_time":          w.StartTime,
			"requests":            w.Requests,
			"request_duration":    w.RequestDuration,
			"content_length":      w.ContentLength,
			"last_request_cpu":    w.LastRequestCPU,
			"last_request_memory": w.LastRequestMemory,
		}, tags("pool", p.Pool, "url", addr, "user", w.User, "request_uri", w.RequestURI,
			"request_method", w.RequestMethod, "script", w.Script), now)
	}
	return nil
}

// tags builds a tag map from key, value pairs, leaving out empty values, which Telegraf's
// line protocol leaves out too.
func tags(kv ...string) map[string]string {
	t := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			t[kv[i]] = kv[i+1]
		}
	}
	return t
}
