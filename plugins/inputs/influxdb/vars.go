package influxdb

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// emitFunc receives one metric of an answer. tags is nil only for the influxdb measurement,
// which has no url tag in Telegraf.
type emitFunc func(name string, fields map[string]any, tags map[string]string)

// point is the shape of InfluxDB's statistics: {"name": ..., "tags": {...}, "values": {...}}.
type point struct {
	Name   string            `json:"name"`
	Tags   map[string]string `json:"tags"`
	Values map[string]any    `json:"values"`
}

// memstats are the fields of Go's runtime.MemStats that Telegraf reports, as int64.
type memstats struct {
	Alloc, TotalAlloc, Sys, Lookups, Mallocs, Frees                    int64
	HeapAlloc, HeapSys, HeapIdle, HeapInuse, HeapReleased, HeapObjects int64
	StackInuse, StackSys, MSpanInuse, MSpanSys, MCacheInuse, MCacheSys int64
	BuckHashSys, GCSys, OtherSys, NextGC, LastGC, PauseTotalNs, NumGC  int64
	PauseNs                                                            [256]int64
	GCCPUFraction                                                      float64
}

func (m *memstats) fields() map[string]any {
	return map[string]any{
		"alloc": m.Alloc, "total_alloc": m.TotalAlloc, "sys": m.Sys, "lookups": m.Lookups,
		"mallocs": m.Mallocs, "frees": m.Frees, "heap_alloc": m.HeapAlloc, "heap_sys": m.HeapSys,
		"heap_idle": m.HeapIdle, "heap_inuse": m.HeapInuse, "heap_released": m.HeapReleased,
		"heap_objects": m.HeapObjects, "stack_inuse": m.StackInuse, "stack_sys": m.StackSys,
		"mspan_inuse": m.MSpanInuse, "mspan_sys": m.MSpanSys, "mcache_inuse": m.MCacheInuse,
		"mcache_sys": m.MCacheSys, "buck_hash_sys": m.BuckHashSys, "gc_sys": m.GCSys,
		"other_sys": m.OtherSys, "next_gc": m.NextGC, "last_gc": m.LastGC,
		"pause_total_ns": m.PauseTotalNs, "pause_ns": m.PauseNs[(m.NumGC+255)%256], // the last pause
		"num_gc": m.NumGC, "gc_cpu_fraction": m.GCCPUFraction,
	}
}

type system struct {
	CurrentTime string `json:"currentTime"`
	Started     string `json:"started"`
	Uptime      uint64 `json:"uptime"`
}

type build struct {
	Branch    string `json:"Branch"`
	BuildTime string `json:"Build Time"`
	Commit    string `json:"Commit"`
	Version   string `json:"Version"`
}

type crypto struct {
	FIPS           bool   `json:"FIPS"`
	EnsureFIPS     bool   `json:"ensureFIPS"`
	Implementation string `json:"implementation"`
	PasswordHash   string `json:"passwordHash"`
}

// decodeVars reads a /debug/vars document key by key, as Telegraf does, so that one entry
// of another shape (a string, an array, an object without name or values) is skipped
// without losing the others.
func decodeVars(r io.Reader, emit emitFunc) error {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return errors.New("document root must be a JSON object")
	}
	shards := 0
	for dec.More() {
		raw, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := raw.(string) // an object's keys are strings
		isShard, err := decodeEntry(dec, key, emit)
		if err != nil {
			return err
		}
		if isShard {
			shards++
		}
	}
	emit("influxdb", map[string]any{"n_shards": int64(shards)}, nil)
	return nil
}

// decodeEntry decodes the value of key and emits what it holds. It fails only when the
// document itself is broken; a value of another shape is skipped.
func decodeEntry(dec *json.Decoder, key string, emit emitFunc) (shard bool, err error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return false, err
	}
	switch key {
	case "system":
		var s system
		if json.Unmarshal(raw, &s) == nil {
			emit("influxdb_system", map[string]any{"current_time": s.CurrentTime, "started": s.Started, "uptime": s.Uptime}, map[string]string{})
		}
	case "memstats":
		var m memstats
		if json.Unmarshal(raw, &m) == nil {
			emit("influxdb_memstats", m.fields(), map[string]string{})
		}
	case "build":
		var b build
		if json.Unmarshal(raw, &b) == nil {
			emit("influxdb_build", map[string]any{"branch": b.Branch, "build_time": b.BuildTime, "commit": b.Commit, "version": b.Version}, map[string]string{})
		}
	case "cmdline":
		var args []string
		if json.Unmarshal(raw, &args) == nil {
			emit("influxdb_cmdline", map[string]any{"value": strings.Join(args, " ")}, map[string]string{})
		}
	case "crypto":
		var c crypto
		if json.Unmarshal(raw, &c) == nil {
			emit("influxdb_crypto", map[string]any{"fips": c.FIPS, "ensure_fips": c.EnsureFIPS,
				"implementation": c.Implementation, "password_hash": c.PasswordHash}, map[string]string{})
		}
	default:
		var p point
		if json.Unmarshal(raw, &p) != nil || p.Name == "" || len(p.Values) == 0 {
			return false, nil
		}
		if p.Tags == nil {
			p.Tags = map[string]string{}
		}
		emit("influxdb_"+p.Name, scalars(p.Values), p.Tags)
		return p.Name == "shard", nil
	}
	return false, nil
}

// scalars keeps the values a field can hold: JSON's numbers (float64), strings and
// booleans. Telegraf drops the others (null, arrays, objects) the same way.
func scalars(values map[string]any) map[string]any {
	for k, v := range values {
		switch v.(type) {
		case float64, string, bool:
		default:
			delete(values, k)
		}
	}
	return values
}
