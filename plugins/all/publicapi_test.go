package all_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	_ "github.com/morse-agent/morse/plugins/all"
)

// A program that embeds morse configures a plugin through its exported fields, and the
// config decoder fills the same fields. A field, embedded or not, whose type lives in an
// internal/ package could be read and set but never named outside this module, so every
// plugin the binary registers is walked, through its exported fields, embedded fields and
// exported methods, down to the last type it reaches.
func TestNoPluginExposesAnInternalType(t *testing.T) {
	reg := morse.DefaultRegistry()
	var plugins []any
	for _, name := range reg.InputNames() {
		info, _ := reg.Input(name)
		plugins = append(plugins, info.New())
	}
	for _, name := range reg.OutputNames() {
		info, _ := reg.Output(name)
		plugins = append(plugins, info.New())
	}
	for _, name := range reg.ProcessorNames() {
		info, _ := reg.Processor(name)
		plugins = append(plugins, info.New())
	}
	for _, name := range reg.AggregatorNames() {
		info, _ := reg.Aggregator(name)
		plugins = append(plugins, info.New())
	}
	require.Greater(t, len(plugins), 30, "the registry holds every plugin")

	w := apiWalker{seen: map[reflect.Type]bool{}}
	for _, p := range plugins {
		w.root(reflect.TypeOf(p))
	}
	for _, v := range w.violations {
		t.Errorf("exported API reaches an internal type: %s", v)
	}
	require.Greater(t, w.structs, 50, "the walk went through the plugins' structs")
}

// apiWalker visits every type reachable from a plugin through its exported surface and
// records each one that an internal/ package declares.
type apiWalker struct {
	seen       map[reflect.Type]bool
	violations []string
	structs    int
}

func isInternal(pkgPath string) bool {
	return strings.Contains(pkgPath, "/internal/") || strings.HasSuffix(pkgPath, "/internal")
}

// root visits a plugin's exported surface. The plugin's own type may sit in an internal
// package (inputs.internal does, as in Telegraf): the registry hands it out as a
// morse.Input, and nothing exported names its type.
func (w *apiWalker) root(typ reflect.Type) {
	path := typ.String()
	if typ.Kind() == reflect.Pointer {
		w.seen[typ] = true
		w.walkMethods(typ, path)
		typ = typ.Elem()
	}
	w.surface(typ, path)
}

// walk visits typ, reached by path (for the message), and what its exported surface names.
func (w *apiWalker) walk(typ reflect.Type, path string) {
	if isInternal(typ.PkgPath()) {
		w.violations = append(w.violations, path+": "+typ.String()+" ("+typ.PkgPath()+")")
		return
	}
	w.surface(typ, path)
}

// surface visits what typ's exported fields, methods and element types name.
func (w *apiWalker) surface(typ reflect.Type, path string) {
	if w.seen[typ] {
		return
	}
	w.seen[typ] = true
	w.walkMethods(typ, path)
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		w.walk(typ.Elem(), path)
	case reflect.Map:
		w.walk(typ.Key(), path+"[key]")
		w.walk(typ.Elem(), path+"[value]")
	case reflect.Func:
		w.walkFunc(typ, path)
	case reflect.Struct:
		w.structs++
		for f := range typ.Fields() {
			if f.IsExported() { // an embedded field is exported when its type's name is
				w.walk(f.Type, path+"."+f.Name)
			}
		}
	}
}

// walkMethods visits the exported methods of typ, promoted ones included; an interface's
// methods are its exported surface too.
func (w *apiWalker) walkMethods(typ reflect.Type, path string) {
	for m := range typ.Methods() {
		if !m.IsExported() {
			continue
		}
		ft := m.Type
		if typ.Kind() != reflect.Interface {
			// A concrete type's method value has the receiver as its first argument.
			ins := make([]reflect.Type, 0, ft.NumIn()-1)
			for i := 1; i < ft.NumIn(); i++ {
				ins = append(ins, ft.In(i))
			}
			outs := make([]reflect.Type, 0, ft.NumOut())
			for i := range ft.NumOut() {
				outs = append(outs, ft.Out(i))
			}
			ft = reflect.FuncOf(ins, outs, ft.IsVariadic())
		}
		w.walkFunc(ft, path+"."+m.Name+"()")
	}
}

func (w *apiWalker) walkFunc(ft reflect.Type, path string) {
	for i := range ft.NumIn() {
		w.walk(ft.In(i), path)
	}
	for i := range ft.NumOut() {
		w.walk(ft.Out(i), path)
	}
}
