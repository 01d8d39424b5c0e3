package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/envsubst"
)

// Source is config text that is not read from a file, such as the embedded default config.
type Source struct {
	Name string // shown in errors in place of a file name
	Data []byte // TOML text, before substitution
}

// Options says where the config comes from. Sources are read first, then Files in order,
// then each of Dirs; later text wins where settings conflict.
type Options struct {
	// Files are config files, read in order.
	Files []string
	// Dirs are config directories: each one's *.conf files, and those of the directories
	// below it, are read in the order of their paths, as Telegraf's --config-directory
	// reads them (DirFiles).
	Dirs []string
	// Sources are config texts held in memory.
	Sources []Source
	// LookupEnv finds environment variables for substitution; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// InputFilter and OutputFilter, when not empty, keep only the plugins of these names,
	// like Telegraf's --input-filter. Other plugins are left out before their tables are
	// read, so that their problems do not stop a narrowed run.
	InputFilter, OutputFilter []string
	// Registry knows the plugins that Load builds; nil means morse.DefaultRegistry(). Read
	// does not look at it.
	Registry *morse.Registry
}

// File is the merged result of every config text that Load read. Global tags and [agent]
// keys are merged key by key, the later text winning; plugins are appended in order.
type File struct {
	GlobalTags  map[string]string // the merged [global_tags] tables
	Agent       AgentConfig       // the merged [agent] tables over DefaultAgentConfig
	Inputs      []*Plugin         // every [[inputs.NAME]], in file order
	Outputs     []*Plugin         // every [[outputs.NAME]], in file order
	Processors  []*Plugin         // every [[processors.NAME]], in file order
	Aggregators []*Plugin         // every [[aggregators.NAME]], in file order
	// Read lists the names of the files and sources that were read, in order.
	Read []string
	// Warnings are what loads but may not be what the author meant, such as an unset
	// environment variable kept as written, in file order.
	Warnings []Warning
}

// location is where a key was written.
type location struct {
	file string
	line int
}

type loader struct {
	opts    Options
	lookup  envsubst.LookupFunc
	out     *File
	errs    Errors
	agentAt map[string]location // where each [agent] key was last set
}

// Load reads, substitutes, parses and merges the config, and decodes everything that does not
// depend on plugin types. The error, when not nil, is an Errors holding every problem found.
// The File is returned even then, so that a caller can go on to check the plugins and report
// their problems in the same run; it must not be used to run anything.
func Read(opts Options) (*File, error) {
	l := &loader{
		opts:    opts,
		lookup:  opts.LookupEnv,
		out:     &File{GlobalTags: map[string]string{}, Agent: DefaultAgentConfig()},
		agentAt: map[string]location{},
	}
	if l.lookup == nil {
		l.lookup = os.LookupEnv
	}
	for i, s := range opts.Sources {
		name := s.Name
		if name == "" {
			name = "source#" + strconv.Itoa(i+1)
		}
		l.text(name, s.Data)
	}
	for _, f := range opts.Files {
		l.file(f)
	}
	for _, d := range opts.Dirs {
		l.dir(d)
	}
	l.finish()
	return l.out, l.errs.Err()
}

func (l *loader) fail(file string, line int, key, msg string) {
	l.errs = append(l.errs, Error{File: file, Line: line, Key: key, Msg: msg})
}

func (l *loader) file(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		l.fail(path, 0, "", "cannot read the config file: "+pathErr(err))
		return
	}
	l.text(path, data)
}

func (l *loader) dir(path string) {
	files, err := DirFiles(path)
	if err != nil {
		l.fail(path, 0, "", "cannot read the config directory: "+pathErr(err))
		return
	}
	for _, f := range files {
		l.file(f)
	}
}

// DirFiles lists the config files of a --config-directory as Telegraf 1.39.3's
// WalkDirectory does: every file whose name is at least six characters and ends in
// ".conf", in this directory and the ones below it, in lexical order of their paths
// (a sub-directory's files come where its name sorts); other files are ignored, and so are
// directories whose names start with "..", Kubernetes' ConfigMap mounts (..data,
// ..2026_11_27...), whose files the mount's symbolic links already name. Unlike Telegraf,
// which logs a warning and reads on, an entry below path that cannot be read fails: Load
// then reports it with the rest.
func DirFiles(path string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(path, func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && p != path && strings.HasPrefix(e.Name(), ".."):
			return filepath.SkipDir
		case !e.IsDir() && len(e.Name()) >= len("x.conf") && strings.HasSuffix(e.Name(), ".conf"):
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// pathErr drops the path from an fs error, since the error is already placed at the path.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// text substitutes, parses and merges one config text.
func (l *loader) text(name string, data []byte) {
	l.out.Read = append(l.out.Read, name)
	src := strings.TrimPrefix(string(data), "\xef\xbb\xbf")
	src, problems := envsubst.Expand(src, l.lookup)
	envLines := map[int]bool{}
	for _, p := range problems {
		if p.Warning && templateKeys[p.Key] {
			continue // a template's own $NAME, kept as Telegraf keeps it
		}
		if p.Warning {
			l.out.Warnings = append(l.out.Warnings, Warning{File: name, Line: p.Line, Key: p.Var, Msg: p.Msg})
			continue
		}
		l.fail(name, p.Line, p.Var, p.Msg)
		envLines[p.Line] = true
	}
	var doc map[string]any
	if _, err := toml.Decode(src, &doc); err != nil {
		var pe toml.ParseError
		switch {
		case !errors.As(err, &pe):
			l.fail(name, 0, "", err.Error())
		case !envLines[pe.Position.Line]:
			// A failed substitution leaves an empty value, which the parser may trip over.
			// The substitution's own message explains that line better.
			l.fail(name, pe.Position.Line, "", "syntax error: "+pe.Message)
		}
		return
	}
	f := &fileDoc{name: name, index: buildIndex(src)}
	for _, key := range sortedKeys(doc) {
		switch key {
		case "global_tags":
			l.globalTags(f, doc[key])
		case "agent":
			l.agent(f, doc[key])
		case KindInputs, KindOutputs, KindProcessors, KindAggregators:
			l.plugins(f, key, doc[key])
		default:
			l.fail(name, f.index.line(key), key, "unknown key")
		}
	}
}

// templateKeys are keys whose values are templates with $NAME of their own: inputs.diskio's
// name_templates name udev properties, processors.regex's replacement a named group. Telegraf
// keeps such a $NAME as written when no environment variable has the name, and so does
// morse, without warning of it as of a missing variable.
var templateKeys = map[string]bool{"name_templates": true, "replacement": true}

// fileDoc is one parsed text with its line index.
type fileDoc struct {
	name  string
	index *lineIndex
}

func (f *fileDoc) problems(l *loader, prefix string, probs []problem) {
	for _, p := range probs {
		path := joinPath(prefix, p.Path)
		l.fail(f.name, f.index.line(path), path, p.Msg)
	}
}

func (l *loader) globalTags(f *fileDoc, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		l.fail(f.name, f.index.line("global_tags"), "global_tags", "expected a table, got "+tomlType(v))
		return
	}
	for _, k := range sortedKeys(m) {
		s, ok := m[k].(string)
		if !ok {
			path := joinPath("global_tags", k)
			l.fail(f.name, f.index.line(path), path, "expected a string, got "+tomlType(m[k]))
			continue
		}
		l.out.GlobalTags[k] = s
	}
}

func (l *loader) agent(f *fileDoc, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		l.fail(f.name, f.index.line("agent"), "agent", "expected a table, got "+tomlType(v))
		return
	}
	l.agentDeprecations(f, m)
	d := &decoder{}
	d.table("", m, reflect.ValueOf(&l.out.Agent).Elem())
	f.problems(l, "agent", d.problems)
	for k := range m {
		l.agentAt[k] = location{file: f.name, line: f.index.line(joinPath("agent", k))}
	}
}

// plugins collects the [[KIND.NAME]] tables of one text in the order they are written.
func (l *loader) plugins(f *fileDoc, kind string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		l.fail(f.name, f.index.line(kind), kind, "expected [["+kind+".NAME]] tables, got "+tomlType(v))
		return
	}
	var keep []string
	switch kind {
	case KindInputs:
		keep = l.opts.InputFilter
	case KindOutputs:
		keep = l.opts.OutputFilter
	}
	var found []*Plugin
	for _, name := range sortedKeys(m) {
		if len(keep) > 0 && !slices.Contains(keep, name) {
			continue
		}
		path := joinPath(kind, name)
		switch x := m[name].(type) {
		case []map[string]any:
			for i, t := range x {
				found = append(found, newPlugin(f, kind, name, indexPath(path, i), t))
			}
		case map[string]any:
			// [inputs.cpu] instead of [[inputs.cpu]]: one instance, as Telegraf reads it.
			found = append(found, newPlugin(f, kind, name, path, x))
		default:
			l.fail(f.name, f.index.line(path), path, "expected [["+path+"]] tables, got "+tomlType(x))
		}
	}
	slices.SortStableFunc(found, func(a, b *Plugin) int { return a.Line - b.Line })
	switch kind {
	case KindInputs:
		l.out.Inputs = append(l.out.Inputs, found...)
	case KindOutputs:
		l.out.Outputs = append(l.out.Outputs, found...)
	case KindProcessors:
		l.out.Processors = append(l.out.Processors, found...)
	case KindAggregators:
		l.out.Aggregators = append(l.out.Aggregators, found...)
	}
}

func newPlugin(f *fileDoc, kind, name, root string, table map[string]any) *Plugin {
	return &Plugin{
		Kind: kind, Name: name, File: f.name, Line: f.index.line(root),
		Fingerprint: fingerprint(kind, name, table),
		table:       table, index: f.index, root: root,
	}
}

// agentRelated names the other key of each agent rule, where a problem is placed when the key
// at fault kept its default and so is written nowhere.
var agentRelated = map[string]string{
	"collection_jitter":   "interval",
	"flush_jitter":        "flush_interval",
	"metric_buffer_limit": "metric_batch_size",
}

// finish checks the merged [agent] table and resolves every plugin against it.
func (l *loader) finish() {
	for _, e := range l.out.Agent.Validate() {
		loc, ok := l.agentAt[e.Key]
		if !ok {
			loc = l.agentAt[agentRelated[e.Key]]
		}
		l.fail(loc.file, loc.line, joinPath("agent", e.Key), e.Msg)
	}
	for _, p := range l.out.Inputs {
		l.errs = append(l.errs, p.errors(p.decodeCommon())...)
		l.errs = append(l.errs, p.errors(p.resolveInput(l.out.Agent))...)
	}
	for _, p := range l.out.Outputs {
		l.errs = append(l.errs, p.errors(p.decodeCommon())...)
		l.errs = append(l.errs, p.errors(p.resolveOutput(l.out.Agent))...)
	}
	l.errs = append(l.errs, sharedDeadLetterFiles(l.out.Outputs)...)
	for _, p := range l.out.Processors {
		l.errs = append(l.errs, p.errors(p.decodeCommon())...)
	}
	for _, p := range l.out.Aggregators {
		l.errs = append(l.errs, p.errors(p.decodeCommon())...)
		l.errs = append(l.errs, p.errors(aggregatorWindow(p.Aggregator))...)
	}
}
