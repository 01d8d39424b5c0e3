package json_v2

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// run is the state of one Parse. Like Telegraf's parser, the walk of an object keeps the
// object's table and the results of its sub-paths here, and a [[json_v2.field]] read
// after an object in the same document sees them: Telegraf's outputs depend on it.
type run struct {
	input          string
	now            time.Time
	name           string
	noFields       int
	cut            []error // errors that ended an array or object early, keeping what came before
	iterateObjects bool
	obj            Object
	objLoc         *time.Location
	subPaths       []subPath
}

// subPath is what a [[json_v2.object.field]] or [[json_v2.object.tag]] found in its object.
type subPath struct {
	res gjson.Result
	tag bool
	DataSet
}

// node is a value being turned into fields or tags of m. Its Result's Index and parent are
// offsets that the walk shifts as Telegraf's does, so that the values that an object's
// sub-paths found are recognised where the walk meets them.
type node struct {
	parent  int
	out     string // the key given to the value
	set     string // the flattened key, which the object's options name
	tag     bool
	typ     string
	include *subPath
	m       *partial
	gjson.Result
}

// expand turns a node into metrics: one for a single value, one per element of an array
// (nested arrays too), the combined keys of an object.
func (r *run) expand(n node, t time.Time) ([]*partial, error) {
	switch {
	case (n.IsObject() || n.IsArray()) && n.typ == "string":
		// An object or array asked for as a string is kept as its JSON text.
		if err := r.set(&n, n.typ); err != nil {
			return nil, err
		}
		return []*partial{n.m}, nil
	case n.IsObject():
		if !r.iterateObjects {
			return nil, nil
		}
		return r.combine(n, t)
	case n.IsArray():
		return r.elements(n, t), nil
	}
	if r.obj.TimestampKey != "" && n.set == r.obj.TimestampKey {
		if r.obj.TimestampFormat == "" {
			return nil, errors.New("use of timestamp_key requires timestamp_format")
		}
		ts, err := timeformat.Parse(r.obj.TimestampFormat, n.String(), r.objLoc)
		if err != nil {
			return nil, err
		}
		n.m.time = ts
		return []*partial{n.m}, nil
	}
	if n.Type == gjson.Null {
		return []*partial{n.m}, nil
	}
	typ := n.typ
	if len(r.obj.FieldPaths) > 0 || len(r.obj.TagPaths) > 0 {
		sp := n.include
		if sp == nil {
			sp = r.found(n.parent)
		}
		if sp == nil {
			return nil, nil
		}
		if sp.tag {
			n.tag = true
		} else {
			typ = sp.Type
		}
		if sp.Rename != "" {
			n.out = sp.Rename
		}
	}
	if err := r.set(&n, typ); err != nil {
		return nil, err
	}
	return []*partial{n.m}, nil
}

// elements expands each element of an array into metrics of its own. As in Telegraf, an
// element that cannot be read ends the array there, keeping the metrics before it.
func (r *run) elements(n node, t time.Time) []*partial {
	if n.include == nil && (len(r.obj.FieldPaths) > 0 || len(r.obj.TagPaths) > 0) {
		n.include = r.found(n.Index)
	}
	var out []*partial
	n.ForEach(func(_, v gjson.Result) bool {
		e := n
		e.m = newPartial(t)
		e.Result = v
		e.Index = v.Index - n.Index
		e.parent = e.Index + n.parent
		if v.IsObject() {
			ms, err := r.combine(e, t)
			if err != nil {
				r.cut = append(r.cut, err)
				return false
			}
			out = append(out, ms...)
			for _, m := range out {
				merge(n.m, m)
			}
			return true
		}
		merge(n.m, e.m)
		ms, err := r.expand(e, t)
		if err != nil {
			r.cut = append(r.cut, err)
			return false
		}
		out = append(out, ms...)
		return true
	})
	return out
}

// found returns the sub-path result at offset index, or nil.
func (r *run) found(index int) *subPath {
	for i := range r.subPaths {
		sp := &r.subPaths[i]
		if sp.res.Index == index {
			return sp
		}
		for _, j := range sp.res.Indexes {
			if j == index {
				return sp
			}
		}
	}
	return nil
}

// set adds n's value to its metric as a tag (a string) or a field of type typ.
func (r *run) set(n *node, typ string) error {
	if n.tag {
		typ = "string"
	}
	v, err := convert(n.Result, typ, n.set)
	if err != nil {
		return err
	}
	if n.tag {
		n.m.addTag(n.out, v.Str())
	} else {
		n.m.addField(n.out, v)
	}
	return nil
}

// combine flattens an object's members into metrics: nested objects are walked, and the
// metrics of its arrays are combined with each other.
func (r *run) combine(n node, t time.Time) ([]*partial, error) {
	if !n.IsArray() && !n.IsObject() {
		return nil, nil
	}
	var out []*partial
	var err error
	n.ForEach(func(k, v gjson.Result) bool {
		key := strings.ReplaceAll(k.String(), " ", "_")
		set := key
		if n.set != "" {
			set = n.set + "_" + key
		}
		if r.excluded(set) || !r.included(set, v) {
			return true
		}
		e := n
		e.parent += v.Index
		e.out, e.set, e.Result = set, set, v
		if r.obj.DisablePrependKeys {
			e.out = key
		}
		if to, ok := r.obj.Renames[set]; ok {
			e.out = to
		}
		if typ, ok := r.obj.Fields[set]; ok {
			e.typ = typ
		}
		e.tag = contains(r.obj.Tags, set)
		if v.IsObject() {
			// Telegraf keeps only the last nested object's metrics, and stops at its error.
			out, err = r.combine(e, t)
			return err == nil
		}
		e.Index -= n.Index
		e.parent -= n.Index
		ms, err := r.expand(e, t)
		if err != nil {
			// As in Telegraf, the error ends the object but does not refuse the document.
			r.cut = append(r.cut, err)
			return false
		}
		out = product(ms, out)
		return true
	})
	return out, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *run) included(key string, v gjson.Result) bool {
	if len(r.obj.IncludedKeys) == 0 {
		return true
	}
	container := v.IsArray() || v.IsObject()
	for _, list := range [][]string{r.obj.IncludedKeys, r.obj.Tags} {
		for _, k := range list {
			if k == key || (container && strings.HasPrefix(k, key)) {
				return true
			}
		}
	}
	return false
}

func (r *run) excluded(key string) bool { return contains(r.obj.ExcludedKeys, key) }

// objects reads the [[json_v2.object]] tables.
func (r *run) objects(objects []Object, t time.Time) ([]*partial, error) {
	r.iterateObjects = true
	var out []*partial
	for _, o := range objects {
		r.obj, r.subPaths = o, nil
		r.objLoc, _ = timeformat.LoadLocation(o.TimestampTimezone)
		res := gjson.Get(r.input, o.Path)
		if !res.Exists() {
			if o.Optional {
				continue
			}
			return nil, fmt.Errorf("the path %q doesn't exist", o.Path)
		}
		if err := r.subPathsOf(res.Raw, o.FieldPaths, false); err != nil {
			return nil, err
		}
		if err := r.subPathsOf(res.Raw, o.TagPaths, true); err != nil {
			return nil, err
		}
		ms, err := r.expand(node{m: newPartial(t), Result: res}, t)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// subPathsOf finds an object's sub-paths within its JSON.
func (r *run) subPathsOf(scope string, sets []DataSet, tag bool) error {
	for _, s := range sets {
		res := gjson.Get(scope, s.Path)
		if !res.Exists() {
			if s.Optional {
				continue
			}
			return fmt.Errorf("the path %q doesn't exist", s.Path)
		}
		r.subPaths = append(r.subPaths, subPath{res: res, tag: tag, DataSet: s})
	}
	return nil
}

var errNotBool = errors.New("not 0 or 1")

// convert gives a value the type asked for, as Telegraf does: strings are parsed, booleans
// become 1 or 0 or "true"/"false", numbers are truncated or printed; an empty type keeps
// the JSON type.
func convert(v gjson.Result, typ, name string) (morse.Value, error) {
	if typ == "string" && (v.IsObject() || v.IsArray()) {
		return morse.String(v.Raw), nil
	}
	fail := func(err error) (morse.Value, error) {
		return morse.Value{}, fmt.Errorf("unable to convert field %q to type %s: %w", name, typ, err)
	}
	switch v.Type {
	case gjson.String:
		switch typ {
		case "uint":
			n, err := strconv.ParseUint(v.Str, 10, 64)
			if err != nil {
				return fail(err)
			}
			return morse.Uint(n), nil
		case "int":
			n, err := strconv.ParseInt(v.Str, 10, 64)
			if err != nil {
				return fail(err)
			}
			return morse.Int(n), nil
		case "float":
			f, err := strconv.ParseFloat(v.Str, 64)
			if err != nil {
				return fail(err)
			}
			return morse.Float(f), nil
		case "bool":
			b, err := strconv.ParseBool(v.Str)
			if err != nil {
				return fail(err)
			}
			return morse.Bool(b), nil
		}
		return morse.String(v.Str), nil
	case gjson.True, gjson.False:
		b := v.Type == gjson.True
		switch typ {
		case "string":
			return morse.String(strconv.FormatBool(b)), nil
		case "int":
			return morse.Int(boolInt(b)), nil
		case "uint":
			return morse.Uint(uint64(boolInt(b))), nil
		}
		return morse.Bool(b), nil
	case gjson.Number:
		switch typ {
		case "string":
			return morse.String(fmt.Sprint(v.Num)), nil
		case "int":
			return morse.Int(v.Int()), nil
		case "uint":
			return morse.Uint(v.Uint()), nil
		case "bool":
			switch v.Num {
			case 0:
				return morse.Bool(false), nil
			case 1:
				return morse.Bool(true), nil
			}
			return fail(errNotBool)
		}
		return morse.Float(v.Num), nil
	}
	return morse.Value{}, fmt.Errorf("unknown format %v for field %q", v.Type, name)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
