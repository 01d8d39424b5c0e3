package morse

import (
	"fmt"
	"slices"
	"sync"
)

// InputInfo describes an input plugin to the registry.
type InputInfo struct {
	Name         string       // the NAME in [[inputs.NAME]]
	Description  string       // one line, shown by `morse config`
	SampleConfig string       // the embedded sample.conf: the [[inputs.NAME]] table, documented
	New          func() Input // returns the plugin with its defaults set, ready to decode into
}

// OutputInfo describes an output plugin to the registry.
type OutputInfo struct {
	Name         string
	Description  string
	SampleConfig string
	New          func() Output
}

// ProcessorInfo describes a processor plugin to the registry.
type ProcessorInfo struct {
	Name         string
	Description  string
	SampleConfig string
	New          func() Processor
}

// AggregatorInfo describes an aggregator plugin to the registry.
type AggregatorInfo struct {
	Name         string
	Description  string
	SampleConfig string
	New          func() Aggregator
}

// Registry holds the plugins that a config can name. Plugins add themselves to the default
// registry in init(); tests build their own.
type Registry struct {
	mu          sync.RWMutex
	inputs      map[string]InputInfo
	outputs     map[string]OutputInfo
	processors  map[string]ProcessorInfo
	aggregators map[string]AggregatorInfo
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{inputs: map[string]InputInfo{}, outputs: map[string]OutputInfo{},
		processors: map[string]ProcessorInfo{}, aggregators: map[string]AggregatorInfo{}}
}

// add registers info under name in m, refusing an empty name, a nil constructor and a
// second plugin of the same kind and name.
func add[I any](r *Registry, m map[string]I, kind, name string, hasNew bool, info I) error {
	if name == "" || !hasNew {
		return fmt.Errorf("registry: %s needs a name and a constructor", kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := m[name]; dup {
		return fmt.Errorf("registry: %s %q is already registered", kind, name)
	}
	m[name] = info
	return nil
}

func lookup[I any](r *Registry, m map[string]I, name string) (I, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	info, ok := m[name]
	return info, ok
}

// AddInput registers an input. A second input of the same name is refused.
func (r *Registry) AddInput(info InputInfo) error {
	return add(r, r.inputs, "input", info.Name, info.New != nil, info)
}

// AddOutput registers an output. A second output of the same name is refused.
func (r *Registry) AddOutput(info OutputInfo) error {
	return add(r, r.outputs, "output", info.Name, info.New != nil, info)
}

// AddProcessor registers a processor. A second processor of the same name is refused.
func (r *Registry) AddProcessor(info ProcessorInfo) error {
	return add(r, r.processors, "processor", info.Name, info.New != nil, info)
}

// AddAggregator registers an aggregator. A second aggregator of the same name is refused.
func (r *Registry) AddAggregator(info AggregatorInfo) error {
	return add(r, r.aggregators, "aggregator", info.Name, info.New != nil, info)
}

// Input looks up an input by name.
func (r *Registry) Input(name string) (InputInfo, bool) { return lookup(r, r.inputs, name) }

// Output looks up an output by name.
func (r *Registry) Output(name string) (OutputInfo, bool) { return lookup(r, r.outputs, name) }

// Processor looks up a processor by name.
func (r *Registry) Processor(name string) (ProcessorInfo, bool) {
	return lookup(r, r.processors, name)
}

// Aggregator looks up an aggregator by name.
func (r *Registry) Aggregator(name string) (AggregatorInfo, bool) {
	return lookup(r, r.aggregators, name)
}

// InputNames lists the registered inputs, sorted.
func (r *Registry) InputNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.inputs)
}

// OutputNames lists the registered outputs, sorted.
func (r *Registry) OutputNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.outputs)
}

// ProcessorNames lists the registered processors, sorted.
func (r *Registry) ProcessorNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.processors)
}

// AggregatorNames lists the registered aggregators, sorted.
func (r *Registry) AggregatorNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.aggregators)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var (
	defaultMu       sync.RWMutex
	defaultRegistry = NewRegistry()
)

// DefaultRegistry is the registry that plugins add themselves to in init().
func DefaultRegistry() *Registry {
	defaultMu.RLock()
	defer defaultMu.RUnlock()
	return defaultRegistry
}

// SetDefaultRegistry replaces the default registry and returns a function that restores the
// previous one. It exists for tests that need a registry of their own.
func SetDefaultRegistry(r *Registry) (restore func()) {
	defaultMu.Lock()
	prev := defaultRegistry
	defaultRegistry = r
	defaultMu.Unlock()
	return func() {
		defaultMu.Lock()
		defaultRegistry = prev
		defaultMu.Unlock()
	}
}

// RegisterInput adds an input to the default registry. It panics on a duplicate name: two
// plugins claiming one name is a build mistake that must not reach a running agent.
func RegisterInput(info InputInfo) {
	if err := DefaultRegistry().AddInput(info); err != nil {
		panic(err)
	}
}

// RegisterOutput adds an output to the default registry, panicking on a duplicate name.
func RegisterOutput(info OutputInfo) {
	if err := DefaultRegistry().AddOutput(info); err != nil {
		panic(err)
	}
}

// RegisterProcessor adds a processor to the default registry, panicking on a duplicate name.
func RegisterProcessor(info ProcessorInfo) {
	if err := DefaultRegistry().AddProcessor(info); err != nil {
		panic(err)
	}
}

// RegisterAggregator adds an aggregator to the default registry, panicking on a duplicate
// name.
func RegisterAggregator(info AggregatorInfo) {
	if err := DefaultRegistry().AddAggregator(info); err != nil {
		panic(err)
	}
}
