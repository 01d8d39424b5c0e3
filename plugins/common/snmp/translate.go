package snmp

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sleepinggenius2/gosmi"
	"github.com/sleepinggenius2/gosmi/models"
	"github.com/sleepinggenius2/gosmi/types"
)

// gosmi keeps one process-wide set of modules and is not safe for concurrent use: every
// call into it holds smiMu. Loading a path is done once per process.
var (
	smiMu     sync.Mutex
	smiInit   bool
	smiLoaded = map[string]bool{}
)

// LoadMIBs gives gosmi every directory under paths and loads every module file found
// there. All directories are added before any module is loaded, so that a module's imports
// resolve whatever the order of the paths. A path that does not exist is logged, not an
// error (Telegraf's behaviour); a module that does not parse is logged and skipped.
func LoadMIBs(paths []string, log *slog.Logger) error {
	smiMu.Lock()
	defer smiMu.Unlock()
	if !smiInit {
		gosmi.Init()
		smiInit = true
	}
	var dirs []string
	for _, p := range paths {
		if smiLoaded[p] {
			continue
		}
		smiLoaded[p] = true
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					log.Warn("MIB path does not exist", "path", path)
					return nil
				}
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			} else if d.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(path); err == nil && st.IsDir() {
					dirs = append(dirs, path)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("walking MIB path %q: %w", p, err)
		}
	}
	for _, d := range dirs {
		gosmi.AppendPath(d)
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			log.Warn("cannot read MIB directory", "path", d, "error", err)
			continue
		}
		for _, e := range ents {
			if st, err := os.Stat(filepath.Join(d, e.Name())); err != nil || !st.Mode().IsRegular() {
				continue
			}
			if _, err := gosmi.LoadModule(e.Name()); err != nil {
				log.Warn("cannot load MIB module", "file", filepath.Join(d, e.Name()), "error", err)
			}
		}
	}
	return nil
}

// translation is what Translate finds for an OID.
type translation struct {
	mib, oidNum, oidText, conversion string
	node                             gosmi.SmiNode
	found                            bool
}

// Translate resolves oid, "MIB::name[.suffix]", a numeric OID or a mixed one such as
// ".iso.3.6", to its numeric form (with a leading dot), its name (without the module; with
// the suffix) and the conversion its type implies ("displayhint" when the type has a
// DISPLAY-HINT, "ipaddr" for InetAddress), as Telegraf's gosmi translator does. A numeric
// OID no MIB knows is returned as is, as its own name.
func Translate(oid string) (translation, error) {
	smiMu.Lock()
	defer smiMu.Unlock()
	return translate(oid)
}

func translate(oid string) (translation, error) {
	var (
		out gosmi.SmiNode
		end string
		tr  = translation{mib: oid, oidNum: oid, oidText: oid}
		err error
	)
	switch {
	case strings.Contains(oid, "::"):
		module, name, _ := strings.Cut(oid, "::")
		mod, err := gosmi.GetModule(module)
		if err != nil {
			return tr, err
		}
		if name == "" {
			return tr, fmt.Errorf("cannot parse %v", oid)
		}
		if n, rest, ok := strings.Cut(name, "."); ok {
			name, end = n, "."+rest
		}
		if out, err = mod.GetNode(name); err != nil {
			return tr, err
		}
		num := out.RenderNumeric()
		if num == "" {
			return tr, fmt.Errorf("cannot translate %v into a numeric OID, please ensure all imported MIBs are in the path", oid)
		}
		tr.oidNum = "." + num + end
	case strings.ContainsAny(oid, "abcdefghijklmnopqrstuvwxyz"):
		parts := strings.Split(oid, ".")
		for i, p := range parts {
			if strings.ContainsAny(p, "abcdefghijklmnopqrstuvwxyz") {
				n, err := gosmi.GetNode(p)
				if err != nil {
					return tr, err
				}
				parts[i] = n.RenderNumeric()
			}
		}
		tr.oidNum = strings.Join(parts, ".")
		o, err := types.OidFromString(tr.oidNum)
		if err != nil {
			return tr, err
		}
		if out, err = gosmi.GetNodeByOID(o); err != nil {
			return tr, err
		}
	default:
		o, perr := types.OidFromString(oid)
		if perr != nil {
			return tr, nil // not an OID gosmi reads: used as written, as Telegraf does
		}
		out, err = gosmi.GetNodeByOID(o)
		if err != nil || out.Name == "iso" {
			return tr, nil // no MIB knows it: numeric, named by itself
		}
	}
	for _, n := range out.GetSubtree() {
		if n.Type == nil {
			break
		}
		if n.Type.Format != "" {
			tr.conversion = "displayhint"
		} else if n.Type.Name == "InetAddress" || n.Type.Name == "IPSIpAddress" {
			tr.conversion = "ipaddr"
		}
	}
	text := out.RenderQualified()
	i := strings.Index(text, "::")
	if i < 0 {
		return translation{mib: "", oidNum: oid, oidText: oid}, errors.New("not found")
	}
	tr.mib, tr.oidText, tr.node, tr.found = text[:i], text[i+2:]+end, out, true
	return tr, nil
}

// tableColumns returns a table's columns as "MIB::column" with whether each is an index
// (a tag), and the table's name, for a table given by its OID.
func tableColumns(oid string) (name string, cols []Field, err error) {
	smiMu.Lock()
	defer smiMu.Unlock()
	tr, err := translate(oid)
	if err != nil {
		return "", nil, fmt.Errorf("translating: %w", err)
	}
	if !tr.found {
		return "", nil, fmt.Errorf("no MIB in the path defines table %s", oid)
	}
	prefix := tr.mib + "::"
	index := map[string]bool{}
	for _, ix := range tr.node.GetIndex() {
		index[ix.Name] = true
	}
	_, names := tr.node.GetColumns()
	for _, c := range names {
		cols = append(cols, Field{Name: c, Oid: prefix + c, IsTag: index[c]})
	}
	return tr.oidText, cols, nil
}

var errUnknownType = errors.New("cannot format value, unknown type")

// formatter formats values by a MIB node's type: enum names and DISPLAY-HINTs.
type formatter struct {
	node  *gosmi.SmiNode // the field's own node when it has a type; else looked up per value
	flags []models.Format
}

// newFormatter resolves the node of a field's numeric OID once.
func newFormatter(oid string, flags ...models.Format) *formatter {
	f := &formatter{flags: flags}
	smiMu.Lock()
	defer smiMu.Unlock()
	if tr, err := translate(oid); err == nil && tr.found && tr.node.Type != nil {
		f.node = &tr.node
	}
	return f
}

// format renders value, the value of instance oid.
func (f *formatter) format(oid string, value any) (string, error) {
	if value == nil {
		return "", nil
	}
	node := f.node
	smiMu.Lock()
	defer smiMu.Unlock()
	if node == nil {
		tr, err := translate(oid)
		if err != nil {
			return "", err
		}
		if !tr.found || tr.node.Type == nil {
			return "", errUnknownType
		}
		node = &tr.node
	}
	return node.FormatValue(value, f.flags...).String(), nil
}

// MibEntry is a trap OID's module and name.
type MibEntry struct {
	MibName string
	OidText string
}

// TrapLookup names oid by the closest node a MIB defines, with the rest of the OID
// appended, as Telegraf's snmp_trap does.
func TrapLookup(oid string) (MibEntry, error) {
	var e MibEntry
	o, err := types.OidFromString(oid)
	if err != nil {
		return e, fmt.Errorf("could not convert OID %s: %w", oid, err)
	}
	smiMu.Lock()
	defer smiMu.Unlock()
	node, err := gosmi.GetNodeByOID(o)
	if err != nil {
		return e, err
	}
	e.OidText = node.Name
	if !o.Equals(node.Oid) {
		e.OidText += "." + o[len(node.Oid):].String()
	}
	if m := node.GetModule(); m.Name != "<well-known>" {
		e.MibName = m.Name
	}
	return e, nil
}
