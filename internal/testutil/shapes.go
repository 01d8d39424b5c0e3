package testutil

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/morse-agent/morse"
)

// Marker qualifies one line of a golden shape list.
type Marker int

// The markers a golden line may carry in its trailing comment.
const (
	// Required: the item must be present on every metric of its measurement.
	Required Marker = iota
	// Optional: the item may be missing from some metrics (for example a tag that only
	// per-CPU series carry); when present its type must match.
	Optional
	// AbsentHere: the item is documented upstream but cannot exist in this test's
	// environment (another OS, or data only the agent provides). It must not be emitted,
	// so that a change which starts emitting it forces the golden file to be revisited.
	AbsentHere
	// MachineDependent: the item exists on some machines and not on others (hardware,
	// kernel version, permissions, traffic seen). It may be absent here; when present its
	// type must match. Unlike AbsentHere it is not an error to see it.
	MachineDependent
)

// ShapeItem is one tag or field of a golden shape. Type is empty for tags.
type ShapeItem struct {
	Key    string
	Type   string
	Marker Marker
	// From names the upstream source the item was read from, "path[:line]" relative to
	// the upstream repository's root, so that the next upstream release can be compared
	// line by line.
	From string
	// Needs names the plugin option that makes the item appear. Such an item is absent
	// when the plugin runs with its defaults, see Shapes.Defaults.
	Needs string
}

// Shape is the documented shape of one measurement.
type Shape struct {
	Measurement string
	Marker      Marker
	From        string
	Needs       string
	Tags        []ShapeItem
	Fields      []ShapeItem
}

// Shapes is a parsed golden file: the config it applies and the measurements it expects.
type Shapes struct {
	// Upstream is the release the list was read from ("v1.39.3"), empty when the file
	// does not say.
	Upstream string
	// Config is the TOML body of the file's config lines, to decode into the plugin.
	Config string
	List   []Shape
}

// LoadShapes reads a golden shape list. The format is line based; '#' starts a comment:
//
//	telegraf <release>                          the upstream release the list was read from
//	config <TOML line>                          decoded into the plugin before the gather
//	measurement <name> [attr ...] [# marker ...]
//	tag <key> [attr ...] [# marker ...]
//	field <key> <type> [attr ...] [# marker ...]  type: float, integer, unsigned, string, boolean
//
// Attributes are key=value words: from=<path>[:<line>] names the upstream source file the
// item was read from; needs=<option> says that only the config lines' <option> makes the
// item appear. When the file has a telegraf line, every item must carry from=.
//
// A trailing comment that starts with "optional", "machine-dependent" or "absent-here"
// sets the marker.
func LoadShapes(path string) (Shapes, error) {
	f, err := os.Open(path)
	if err != nil {
		return Shapes{}, err
	}
	defer f.Close()
	var s Shapes
	var cfg strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "config "); ok {
			cfg.WriteString(rest + "\n")
			continue
		}
		if rest, ok := strings.CutPrefix(line, "telegraf "); ok {
			s.Upstream = strings.TrimSpace(rest)
			continue
		}
		if err := s.parseLine(line); err != nil {
			return Shapes{}, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	s.Config = cfg.String()
	if err := sc.Err(); err != nil {
		return Shapes{}, err
	}
	if s.Upstream != "" {
		if err := s.requireSources(); err != nil {
			return Shapes{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	return s, nil
}

// requireSources checks that every item names its upstream source, so that a list read
// from a release stays traceable line by line.
func (s Shapes) requireSources() error {
	for _, sh := range s.List {
		if sh.From == "" {
			return fmt.Errorf("measurement %s: no from=", sh.Measurement)
		}
		for _, it := range append(append([]ShapeItem(nil), sh.Tags...), sh.Fields...) {
			if it.From == "" {
				return fmt.Errorf("measurement %s: %s: no from=", sh.Measurement, it.Key)
			}
		}
	}
	return nil
}

var fromPattern = regexp.MustCompile(`^[\w./-]+(:\d+)?$`)

func parseMarker(comment string) Marker {
	switch c := strings.TrimSpace(comment); {
	case strings.HasPrefix(c, "absent-here"):
		return AbsentHere
	case strings.HasPrefix(c, "machine-dependent"):
		return MachineDependent
	case strings.HasPrefix(c, "optional"):
		return Optional
	}
	return Required
}

// splitAttrs separates the positional words of a line from its key=value attributes.
func splitAttrs(words []string) (pos []string, from, needs string, err error) {
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case !ok:
			pos = append(pos, w)
		case k == "from" && fromPattern.MatchString(v):
			from = v
		case k == "needs" && v != "":
			needs = v
		default:
			return nil, "", "", fmt.Errorf("bad attribute %q: want from=<path>[:<line>] or needs=<option>", w)
		}
	}
	return pos, from, needs, nil
}

func (s *Shapes) parseLine(line string) error {
	body, comment, _ := strings.Cut(line, "#")
	marker := parseMarker(comment)
	words, from, needs, err := splitAttrs(strings.Fields(body))
	if err != nil {
		return err
	}
	switch {
	case len(words) == 2 && words[0] == "measurement":
		s.List = append(s.List, Shape{Measurement: words[1], Marker: marker, From: from, Needs: needs})
		return nil
	case len(s.List) == 0:
		return fmt.Errorf("%q comes before any measurement line", line)
	}
	cur := &s.List[len(s.List)-1]
	item := ShapeItem{Key: words[min(1, len(words)-1)], Marker: marker, From: from, Needs: needs}
	switch {
	case len(words) == 2 && words[0] == "tag":
		cur.Tags = append(cur.Tags, item)
	case len(words) == 3 && words[0] == "field":
		item.Type = words[2]
		switch item.Type {
		case "float", "integer", "unsigned", "string", "boolean":
		default:
			return fmt.Errorf("field %s: unknown type %q", item.Key, item.Type)
		}
		cur.Fields = append(cur.Fields, item)
	default:
		return fmt.Errorf("cannot read %q: want measurement, tag or field", line)
	}
	return nil
}

// Defaults returns the shapes the plugin emits with its default options: no config, and
// every item that needs an option absent.
func (s Shapes) Defaults() Shapes {
	out := Shapes{Upstream: s.Upstream}
	off := func(it ShapeItem) ShapeItem {
		if it.Needs != "" {
			it.Marker = AbsentHere
		}
		return it
	}
	for _, sh := range s.List {
		c := sh
		if c.Needs != "" {
			c.Marker = AbsentHere
		}
		c.Tags, c.Fields = nil, nil
		for _, t := range sh.Tags {
			c.Tags = append(c.Tags, off(t))
		}
		for _, f := range sh.Fields {
			c.Fields = append(c.Fields, off(f))
		}
		out.List = append(out.List, c)
	}
	return out
}

// Check compares metrics with the shapes and returns every difference, once each: unknown
// measurements, tags or fields, missing required ones, wrong types, and absent-here items
// that were emitted. No differences means the metrics match the golden list exactly.
func (s Shapes) Check(metrics []morse.Metric) []string {
	var problems []string
	seen := map[string]bool{}
	report := func(format string, args ...any) {
		p := fmt.Sprintf(format, args...)
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	emitted := map[string]bool{}
	for _, m := range metrics {
		emitted[m.Name()] = true
		shape, ok := s.find(m.Name())
		switch {
		case !ok:
			report("measurement %s: emitted but not in the golden list", m.Name())
			continue
		case shape.Marker == AbsentHere:
			report("measurement %s: emitted but marked absent-here", m.Name())
		}
		checkTags(shape, m, report)
		checkFields(shape, m, report)
	}
	for _, shape := range s.List {
		if shape.Marker == Required && !emitted[shape.Measurement] {
			report("measurement %s: not emitted", shape.Measurement)
		}
	}
	return problems
}

func (s Shapes) find(name string) (Shape, bool) {
	for _, shape := range s.List {
		if shape.Measurement == name {
			return shape, true
		}
	}
	return Shape{}, false
}

func checkTags(shape Shape, m morse.Metric, report func(string, ...any)) {
	for _, t := range m.Tags() {
		item, ok := findItem(shape.Tags, t.Key)
		switch {
		case !ok:
			report("%s: tag %s: emitted but not in the golden list", m.Name(), t.Key)
		case item.Marker == AbsentHere:
			report("%s: tag %s: emitted but marked absent-here", m.Name(), t.Key)
		}
	}
	for _, item := range shape.Tags {
		if _, ok := m.Tag(item.Key); !ok && item.Marker == Required {
			report("%s: tag %s: missing", m.Name(), item.Key)
		}
	}
}

func checkFields(shape Shape, m morse.Metric, report func(string, ...any)) {
	for _, f := range m.Fields() {
		item, ok := findItem(shape.Fields, f.Key)
		switch {
		case !ok:
			report("%s: field %s: emitted but not in the golden list", m.Name(), f.Key)
		case item.Marker == AbsentHere:
			report("%s: field %s: emitted but marked absent-here", m.Name(), f.Key)
		case f.Value.Type().String() != item.Type:
			report("%s: field %s: type %s, golden says %s", m.Name(), f.Key, f.Value.Type(), item.Type)
		}
	}
	for _, item := range shape.Fields {
		if _, ok := m.Field(item.Key); !ok && item.Marker == Required {
			report("%s: field %s: missing", m.Name(), item.Key)
		}
	}
}

func findItem(items []ShapeItem, key string) (ShapeItem, bool) {
	for _, it := range items {
		if it.Key == key {
			return it, true
		}
	}
	return ShapeItem{}, false
}
