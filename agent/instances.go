package agent

import (
	"reflect"
	"sync"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
)

// instanceKey names a plugin instance held by reference; ok is false for one held by value,
// whose copies are instances of their own.
type instanceKey struct {
	t reflect.Type
	p uintptr
}

func keyOf(plugin any) (instanceKey, bool) {
	v := reflect.ValueOf(plugin)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return instanceKey{v.Type(), v.Pointer()}, true
	}
	return instanceKey{}, false
}

// sameInstance reports whether two plugins are the one instance.
func sameInstance(a, b any) bool {
	ka, ok := keyOf(a)
	kb, _ := keyOf(b)
	return ok && ka == kb
}

// outputInstances remembers, per output plugin instance, when the writer that last used it
// has closed it. A reload that passes an instance again with other settings gives it to a
// new writer, which must not connect it before the old one has closed it (and must not
// initialise it again). An entry goes once its writer has closed: the address may then be
// reused by another instance.
type outputInstances struct {
	mu     sync.Mutex
	closed map[instanceKey]<-chan struct{}
}

// prune forgets the instances whose writer has closed them. Called with mu held.
func (o *outputInstances) prune() {
	for k, ch := range o.closed {
		select {
		case <-ch:
			delete(o.closed, k)
		default:
		}
	}
}

// known reports whether a writer of this agent still uses out, or is closing it.
func (o *outputInstances) known(out morse.Output) bool {
	return o.handOver(out) != nil
}

// handOver returns what a new writer of out waits for before it connects: the closing of
// the writer that still uses out, or nil when none does.
func (o *outputInstances) handOver(out morse.Output) <-chan struct{} {
	k, ok := keyOf(out)
	if !ok {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prune()
	return o.closed[k]
}

// started records w as the writer of out.
func (o *outputInstances) started(out morse.Output, w *batch.Writer) {
	k, ok := keyOf(out)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed == nil {
		o.closed = map[instanceKey]<-chan struct{}{}
	}
	o.closed[k] = w.Closed()
}

// inputRuns reports whether one of the agent's current inputs is the instance in.
func (a *Agent) inputRuns(in morse.Input) bool {
	for _, ri := range a.inputs {
		if sameInstance(ri.cfg.Plugin, in) {
			return true
		}
	}
	return false
}
