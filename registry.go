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

// Registry holds the plugins that a config can name. Plugins add themselves to the default
// registry in init(); tests build their own.
type Registry struct {
	mu      sync.RWMutex
	inputs  map[string]InputInfo
	outputs map[string]OutputInfo
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{inputs: map[string]InputInfo{}, outputs: map[string]OutputInfo{}}
}

// AddInput registers an input. A second input of the same name is refused.
func (r *Registry) AddInput(info InputInfo) error {
	if info.Name == "" || info.New == nil {
		return fmt.Errorf("registry: input needs a name and a constructor")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.inputs[info.Name]; dup {
		return fmt.Errorf("registry: input %q is already registered", info.Name)
	}
	r.inputs[info.Name] = info
	return nil
}

// AddOutput registers an output. A second output of the same name is refused.
func (r *Registry) AddOutput(info OutputInfo) error {
	if info.Name == "" || info.New == nil {
		return fmt.Errorf("registry: output needs a name and a constructor")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.outputs[info.Name]; dup {
		return fmt.Errorf("registry: output %q is already registered", info.Name)
	}
	r.outputs[info.Name] = info
	return nil
}

// Input looks up an input by name.
func (r *Registry) Input(name string) (InputInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	info, ok := r.inputs[name]
	return info, ok
}

// Output looks up an output by name.
func (r *Registry) Output(name string) (OutputInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	info, ok := r.outputs[name]
	return info, ok
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
