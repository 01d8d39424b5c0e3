package morse_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program outside this module can import every package but the internal/ ones, so an
// exported name whose signature names an internal type hands it a value it cannot name:
// it can neither declare a variable of it nor fill its fields. This test reads the source
// of every importable package and checks what each exported declaration spells: function
// and method signatures, type definitions with their exported and embedded fields and
// interface methods, and the written types of exported variables and constants. (A
// variable whose type is only inferred is not seen; plugins/all's walk covers the plugins'
// values.)
func TestNoExportedNameNamesAnInternalType(t *testing.T) {
	fset := token.NewFileSet()
	var files, violations []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "testdata" || d.Name() == "internal" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil // nothing imports a command
		}
		files = append(files, path)
		violations = append(violations, internalNames(fset, f)...)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(files), 200, "the walk read the module's packages")
	for _, v := range violations {
		t.Errorf("exported name names an internal type: %s", v)
	}
}

// internalNames reports every exported declaration of f that names a type of an internal
// package.
func internalNames(fset *token.FileSet, f *ast.File) []string {
	c := apiChecker{fset: fset, internal: map[string]string{}}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(path, "/internal/") && !strings.HasSuffix(path, "/internal") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		c.internal[name] = path
	}
	if len(c.internal) == 0 {
		return nil
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedReceiver(d.Recv)) {
				c.expr(d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			c.genDecl(d)
		}
	}
	return c.found
}

type apiChecker struct {
	fset     *token.FileSet
	internal map[string]string // local import name → path, of the internal imports
	found    []string
}

func (c *apiChecker) genDecl(d *ast.GenDecl) {
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if s.Name.IsExported() {
				if s.TypeParams != nil {
					c.expr(s.Name.Name, s.TypeParams)
				}
				c.expr(s.Name.Name, s.Type)
			}
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.IsExported() && s.Type != nil {
					c.expr(n.Name, s.Type)
				}
			}
		}
	}
}

// exportedReceiver reports whether a method's receiver type is exported, so that the
// method can be called from outside.
func exportedReceiver(recv *ast.FieldList) bool {
	typ := recv.List[0].Type
	for {
		switch t := typ.(type) {
		case *ast.StarExpr:
			typ = t.X
		case *ast.IndexExpr:
			typ = t.X
		case *ast.IndexListExpr:
			typ = t.X
		case *ast.Ident:
			return t.IsExported()
		default:
			return false
		}
	}
}

// expr records every internal type that node spells where outside code can see it: in a
// struct only the exported and embedded-exported fields, in an interface only the exported
// methods and embedded interfaces.
func (c *apiChecker) expr(name string, node ast.Node) {
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.StructType:
			for _, f := range n.Fields.List {
				if visibleField(f) {
					c.expr(name, f.Type)
				}
			}
			return false
		case *ast.InterfaceType:
			for _, m := range n.Methods.List {
				if len(m.Names) == 0 || m.Names[0].IsExported() {
					c.expr(name, m.Type)
				}
			}
			return false
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if path, ok := c.internal[id.Name]; ok {
					c.found = append(c.found, c.fset.Position(n.Pos()).String()+": "+name+" names "+path+"."+n.Sel.Name)
				}
			}
			return false
		}
		return true
	})
}

// visibleField reports whether a struct field can be reached from outside: a named field
// with an exported name, or an embedded field whose type's name is exported.
func visibleField(f *ast.Field) bool {
	if len(f.Names) == 0 {
		typ := f.Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		switch t := typ.(type) {
		case *ast.SelectorExpr:
			return t.Sel.IsExported()
		case *ast.Ident:
			return t.IsExported()
		}
		return true
	}
	for _, n := range f.Names {
		if n.IsExported() {
			return true
		}
	}
	return false
}
