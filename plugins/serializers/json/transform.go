package json

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	jsonata "github.com/blues/jsonata-go"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// transformation is a compiled json_transformation. With it the serializer works as
// Telegraf's does: it builds each metric as Go maps, evaluates the JSONata expression on
// them and writes the result with encoding/json, so that the bytes are Telegraf's (a float
// with an integral value is written without a decimal point here). It is the slow path:
// the maps are built for every metric.
type transformation struct {
	mu   sync.Mutex // evaluations are serialized: the library does not say it allows more
	expr *jsonata.Expr
}

func compileTransformation(src string) (*transformation, error) {
	expr, err := jsonata.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("JSONata expression: %w", err)
	}
	return &transformation{expr: expr}, nil
}

func (t *transformation) eval(obj any) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.expr.Eval(obj)
}

// transformMetric appends the transformation of one metric's object.
func (s *Serializer) transformMetric(dst []byte, m morse.Metric) ([]byte, error) {
	obj, err := s.transform.eval(s.object(m))
	if err != nil {
		if errors.Is(err, jsonata.ErrUndefined) {
			err = fmt.Errorf("%w (is the output meant to use use_batch_format?)", err)
		}
		return dst, s.fail(err, m)
	}
	return appendMarshal(dst, obj, m, s)
}

// transformBatch appends the transformation of {"metrics":[...]}. An expression that fails
// on the batch fails every metric of it.
func (s *Serializer) transformBatch(dst []byte, batch []morse.Metric) ([]byte, error) {
	objs := make([]any, len(batch))
	for i, m := range batch {
		objs[i] = s.object(m)
	}
	out, err := s.transform.eval(map[string]any{"metrics": objs})
	if err == nil {
		var b []byte
		if b, err = stdjson.Marshal(out); err == nil {
			return append(append(dst, b...), '\n'), nil
		}
	}
	if errors.Is(err, jsonata.ErrUndefined) {
		err = fmt.Errorf("%w (is the output meant to write one metric at a time, without use_batch_format?)", err)
	}
	var failed serializers.Error
	for i := range batch {
		failed.Add(i, morse.Permanent(morse.ReasonSerialize, fmt.Errorf("json: json_transformation: %w", err)))
	}
	return dst, failed.Err()
}

func appendMarshal(dst []byte, obj any, m morse.Metric, s *Serializer) ([]byte, error) {
	b, err := stdjson.Marshal(obj)
	if err != nil {
		return dst, s.fail(err, m)
	}
	return append(append(dst, b...), '\n'), nil
}

// object is m as Telegraf's json serializer builds it before the transformation.
func (s *Serializer) object(m morse.Metric) map[string]any {
	m = m.Expanded()
	tags := make(map[string]string, len(m.Tags()))
	for _, t := range m.Tags() {
		tags[t.Key] = t.Value
	}
	fields := make(map[string]any, len(m.Fields()))
	for _, f := range m.Fields() {
		v := f.Value.Interface()
		switch f.Value.Type() {
		case morse.TypeFloat:
			if x := f.Value.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
				s.skipped.Add(1)
				continue
			}
		case morse.TypeString:
			if s.nested(f.Key) {
				var nested any
				if stdjson.Unmarshal([]byte(f.Value.Str()), &nested) == nil {
					v = nested
				}
			}
		case morse.TypeInvalid:
			continue
		}
		fields[f.Key] = v
	}
	obj := map[string]any{"tags": tags, "fields": fields, "name": m.Name()}
	if s.layout != "" {
		obj["timestamp"] = m.Time().UTC().Format(s.layout)
	} else {
		obj["timestamp"] = m.Time().UnixNano() / s.units
	}
	return obj
}
