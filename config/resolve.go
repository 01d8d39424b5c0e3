package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// resolved is what Config.Resolve computes for an input or output.
type resolved struct {
	compiledFilter
	identity string        // see InputConfig.Identity
	interval time.Duration // an input's effective gather interval
}

// compiledFilter is the Filter that Load or Resolve compiled from a plugin's Common.Filter,
// and what it was compiled from, so that a later Resolve tells it from one the program set.
type compiledFilter struct {
	compiled *filter.Filter
	from     filter.Config
}

// Identity says which plugin this is across a reload: a reload keeps the running input, and
// its listeners, when the new config has one of equal Name and Identity. For a config from
// Load it is the table's Fingerprint; for one built in code, where no table exists, it is
// the plugin instance (the same pointer is the same input) with its Common options and
// Filter. The effective interval is part of both. Config.Resolve computes it.
func (ic *InputConfig) Identity() string { return ic.identity }

// Identity says which output this is across a reload: a reload keeps the running output,
// with its buffer, when the new config has one of equal Name and Identity. It is built as
// InputConfig.Identity is, with the effective flush and buffer settings.
func (oc *OutputConfig) Identity() string { return oc.identity }

// Resolve computes what every input and output runs with (the effective interval, flush
// and buffer settings, from its Common options over c.Agent), checks every plugin's Common
// options by the rules that Load applies to a file (an aggregator's window too), compiles
// each Common.Filter, and computes each input's and output's Identity. Load, NewAgent and
// every reload call it, so a program that builds a config in code may change c.Agent or a
// plugin's Common at any point before the agent starts, and every setting it makes either
// takes effect or is refused. A nil plugin, and an instance that two plugins of the config
// share, are refused. Each problem is an Error whose key is the path of the field at fault,
// such as "outputs[0].flush_interval" or "aggregators[0].period", after the plugin's Source.
func (c *Config) Resolve() error {
	var errs Errors
	for _, e := range c.Agent.Validate() {
		e.Key = joinPath("agent", e.Key)
		errs = append(errs, e)
	}
	instances := map[string]string{}
	errs = append(errs, c.resolveInputs(instances)...)
	errs = append(errs, c.resolveOutputs(instances)...)
	errs = append(errs, c.resolveProcessors(instances)...)
	errs = append(errs, c.resolveAggregators(instances)...)
	return errs.Err()
}

// resolveInputs computes each input's interval, filter and Identity.
func (c *Config) resolveInputs(instances map[string]string) Errors {
	var errs Errors
	for i, ic := range c.Inputs {
		at := indexPath(KindInputs, i)
		if perrs := checkInstance(instances, ic.Plugin, ic.Source, at); perrs != nil {
			errs = append(errs, perrs...)
			continue
		}
		errs = append(errs, validateCode(ic.Plugin, ic.Source, at)...)
		iv, probs := inputInterval(ic.Common, c.Agent)
		errs = append(errs, placeAt(ic.Source, at, probs)...)
		var ferrs Errors
		ic.Filter, ferrs = ic.filter(ic.Filter, ic.Common.Filter, ic.Source, at)
		errs = append(errs, ferrs...)
		ic.interval = iv
		ic.identity = identity(ic.Name, ic.Fingerprint, ic.Plugin, ic.Common, ic.own(ic.Filter), iv)
	}
	return errs
}

// resolveOutputs computes each output's settings, filter and Identity, and refuses a
// dead_letter_file that an earlier output already names.
func (c *Config) resolveOutputs(instances map[string]string) Errors {
	var errs Errors
	deadLetters := map[string]string{}
	for i, oc := range c.Outputs {
		at := indexPath(KindOutputs, i)
		if perrs := checkInstance(instances, oc.Plugin, oc.Source, at); perrs != nil {
			errs = append(errs, perrs...)
			continue
		}
		errs = append(errs, validateCode(oc.Plugin, oc.Source, at)...)
		s, probs := outputSettings(oc.Common, c.Agent)
		errs = append(errs, placeAt(oc.Source, at, probs)...)
		var ferrs Errors
		oc.Filter, ferrs = oc.filter(oc.Filter, oc.Common.Filter, oc.Source, at)
		errs = append(errs, ferrs...)
		if path := oc.Common.DeadLetterFile; path != "" {
			if first, ok := deadLetters[DeadLetterKey(path)]; ok {
				errs = append(errs, placeAt(oc.Source, at, []problem{{"dead_letter_file",
					fmt.Sprintf("%q is already the dead_letter_file of %s: give each output a file of its own", path, first)}})...)
			}
			deadLetters[DeadLetterKey(path)] = at
		}
		oc.settings = s
		oc.identity = identity(oc.Name, oc.Fingerprint, oc.Plugin, oc.Common, oc.own(oc.Filter),
			s.FlushInterval, s.FlushJitter, s.BatchSize, s.BufferLimit)
	}
	return errs
}

// resolveProcessors checks each processor's instances and compiles its filter. The
// instance after aggregators may be the processor's own one, as AddProcessor makes it, or
// nil, when the processor serves both streams; another processor's is refused.
func (c *Config) resolveProcessors(instances map[string]string) Errors {
	var errs Errors
	for i, pc := range c.Processors {
		at := indexPath(KindProcessors, i)
		if perrs := checkInstance(instances, pc.Plugin, pc.Source, at); perrs != nil {
			errs = append(errs, perrs...)
			continue
		}
		errs = append(errs, validateCode(pc.Plugin, pc.Source, at)...)
		if pc.AfterAggregators != nil && !sameInstance(pc.AfterAggregators, pc.Plugin) {
			errs = append(errs, checkInstance(instances, pc.AfterAggregators, pc.Source, joinPath(at, "AfterAggregators"))...)
		}
		var ferrs Errors
		pc.Filter, ferrs = pc.filter(pc.Filter, pc.Common.Filter, pc.Source, at)
		errs = append(errs, ferrs...)
	}
	return errs
}

// resolveAggregators checks each aggregator's instance and window and compiles its filter.
func (c *Config) resolveAggregators(instances map[string]string) Errors {
	var errs Errors
	for i, ac := range c.Aggregators {
		at := indexPath(KindAggregators, i)
		if perrs := checkInstance(instances, ac.Plugin, ac.Source, at); perrs != nil {
			errs = append(errs, perrs...)
			continue
		}
		errs = append(errs, validateCode(ac.Plugin, ac.Source, at)...)
		errs = append(errs, placeAt(ac.Source, at, aggregatorWindow(ac.Common))...)
		var ferrs Errors
		ac.Filter, ferrs = ac.filter(ac.Filter, ac.Common.Filter, ac.Source, at)
		errs = append(errs, ferrs...)
	}
	return errs
}

// sameInstance reports whether a and b are the one instance: equal references, not merely
// equal values.
func sameInstance(a, b any) bool {
	ka, ok := instanceKey(a)
	kb, _ := instanceKey(b)
	return ok && ka == kb
}

// checkInstance refuses a nil plugin and a plugin instance that an earlier plugin of the
// config already is: one instance cannot serve two writers or gather loops, which
// would call it concurrently and close it under each other.
func checkInstance(seen map[string]string, plugin any, source, at string) Errors {
	if plugin == nil || reflect.ValueOf(plugin).Kind() == reflect.Pointer && reflect.ValueOf(plugin).IsNil() {
		return placeAt(source, at, []problem{{"", "the plugin is nil"}})
	}
	key, ok := instanceKey(plugin)
	if !ok {
		return nil // a value: each copy is an instance of its own
	}
	if first, dup := seen[key]; dup {
		return placeAt(source, at, []problem{{"", "is the same plugin instance as " + first +
			": give each one an instance of its own"}})
	}
	seen[key] = at
	return nil
}

// validateCode lets a plugin built in code validate itself, as the loader lets a file's
// plugin once its table decoded (preparePlugin), so that a program's settings are refused
// with the field's path, such as "outputs[0].urls", as a file's are with its line. A
// plugin whose Source names a file was validated when it was built; one that a program put
// in a config by hand, with no Source, is validated as one of AddOutput's.
func validateCode(plugin any, source, at string) Errors {
	v, ok := plugin.(morse.Validator)
	if !ok || (source != "code" && source != "") { // a file's: validated when it was built
		return nil
	}
	return placeAt(source, at, problemsOf(v.Validate()))
}

// problemsOf turns a plugin's Validate error into problems: each *morse.FieldError, also
// inside errors.Join, under its key, anything else under the plugin itself.
func problemsOf(err error) []problem {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []problem
		for _, e := range joined.Unwrap() {
			out = append(out, problemsOf(e)...)
		}
		return out
	}
	if fe, ok := errors.AsType[*morse.FieldError](err); ok {
		return []problem{{fe.Key, fe.Err.Error()}}
	}
	return []problem{{"", err.Error()}}
}

// filter compiles common into the plugin's Filter. A Filter that the program set itself
// is kept when common is empty, and refused when it is not, since one of the two would be
// ignored.
func (r *compiledFilter) filter(set *filter.Filter, common filter.Config, source, at string) (*filter.Filter, Errors) {
	if common.IsEmpty() {
		if set == r.compiled { // compiled from a Common.Filter that is now empty
			set = nil
		}
		r.compiled = set
		return set, nil
	}
	if set != nil && set != r.compiled {
		return set, placeAt(source, at, []problem{{"Filter", "is set together with Common.Filter: set only one of them"}})
	}
	if set != nil && reflect.DeepEqual(common, r.from) {
		return set, nil // unchanged: the same Filter, so the plugin's identity stays
	}
	f, err := filter.New(common)
	if err != nil {
		key, msg := "", err.Error()
		var fe *morse.FieldError
		if errors.As(err, &fe) {
			key, msg = fe.Key, fe.Err.Error()
		}
		return set, placeAt(source, at, []problem{{key, msg}})
	}
	r.compiled, r.from = f, common
	return f, nil
}

// own is f when the program set it, nil when it was compiled from Common.Filter, which
// the identity holds already.
func (r *compiledFilter) own(f *filter.Filter) *filter.Filter {
	if f == r.compiled {
		return nil
	}
	return f
}

// placeAt turns problems keyed by option name into Errors keyed by the option's path in the
// config, such as "outputs[0].flush_interval".
func placeAt(source, at string, probs []problem) Errors {
	var errs Errors
	for _, p := range probs {
		errs = append(errs, Error{File: source, Key: joinPath(at, p.Path), Msg: p.Msg})
	}
	return errs
}

// identity is a plugin's Identity: its table's fingerprint when it has one, else its
// instance, with its common options and filter; then the effective settings.
func identity(name, fingerprint string, plugin, common any, f *filter.Filter, settings ...any) string {
	if fingerprint == "" {
		key, ok := instanceKey(plugin)
		if !ok {
			key = fmt.Sprintf("%T=%#v", plugin, plugin) // equal values are the same plugin
		}
		opts, err := json.Marshal(common) // maps sorted, pointers followed
		if err != nil {
			opts = fmt.Appendf(nil, "%#v", common)
		}
		fingerprint = fmt.Sprintf("code:%s:%s:%p", key, opts, f)
	}
	return combineFingerprint(name+"\x00"+fingerprint, settings...)
}

// instanceKey names a plugin whose value is a reference (a pointer, map, chan or func) by
// its type and address, which stay the same for as long as a config holds it; ok is false
// for a plugin held by value.
func instanceKey(plugin any) (string, bool) {
	v := reflect.ValueOf(plugin)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return fmt.Sprintf("%T@%x", plugin, v.Pointer()), true
	}
	return "", false
}
