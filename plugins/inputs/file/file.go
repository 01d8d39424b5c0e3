// Package file is the inputs.file plugin. Every interval it reads each file that matches
// its patterns in full and parses it in its data_format, with Telegraf's options: files
// (globs, ** included), character_encoding, data_format and its options, file_tag and
// file_path_tag.
//
// A pattern that matches nothing, a file that cannot be read and malformed lines are
// reported through acc.AddError; the other files, and the valid lines around a malformed
// one, are still reported. Telegraf stops the gather at the first of these instead.
package file

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/inputs/file/globpath"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Parse a complete file each interval"

//go:embed sample.conf
var sampleConfig string

// File is the inputs.file plugin and its configuration. Build it with New.
type File struct {
	// Files are the paths or glob patterns of the files to read.
	Files []string `toml:"files"`
	// CharacterEncoding is "", "utf-8", "utf-16le" or "utf-16be".
	CharacterEncoding string `toml:"character_encoding"`
	// Config is data_format ("influx" by default) and the options of each format.
	dataformat.Config
	// FileTag names a tag that receives the file's base name; empty adds none.
	FileTag string `toml:"file_tag"`
	// FilePathTag names a tag that receives the file's absolute path; empty adds none.
	FilePathTag string `toml:"file_path_tag"`
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input     = (*File)(nil)
	_ morse.Validator = (*File)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *File { return &File{Config: dataformat.Config{DataFormat: "influx"}} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "file",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate checks the options and compiles the patterns.
func (f *File) Validate() error {
	errs := []error{f.Config.Validate()}
	if err := CheckEncoding(f.CharacterEncoding); err != nil {
		errs = append(errs, morse.Errorf("character_encoding", "%v", err))
	}
	if _, err := compile(f.Files); err != nil {
		errs = append(errs, morse.Errorf("files", "%v", err))
	}
	return errors.Join(errs...)
}

func compile(patterns []string) ([]*globpath.Glob, error) {
	globs := make([]*globpath.Glob, 0, len(patterns))
	for _, p := range patterns {
		g, err := globpath.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("could not compile glob %q: %w", p, err)
		}
		globs = append(globs, g)
	}
	return globs, nil
}

// Gather reads and parses every matching file. The patterns are matched afresh every
// gather, so that files which appear later are read too.
func (f *File) Gather(_ context.Context, acc morse.Accumulator) error {
	globs, err := compile(f.Files)
	if err != nil {
		return err
	}
	for _, g := range globs {
		files := g.Match()
		if len(files) == 0 {
			acc.AddError(fmt.Errorf("could not find file(s): %v", g))
			continue
		}
		for _, name := range files {
			f.gatherFile(name, acc)
		}
	}
	return nil
}

func (f *File) gatherFile(name string, acc morse.Accumulator) {
	data, err := os.ReadFile(name)
	if err != nil {
		acc.AddError(fmt.Errorf("could not read %q: %w", name, err))
		return
	}
	data = Decode(f.CharacterEncoding, data)
	// A parser per file and gather, as Telegraf's file input makes: a format that keeps
	// state from payload to payload (csv's header rows) reads each file from its start.
	parser, err := f.NewParser(parsers.Settings{MetricName: "file"})
	if err != nil {
		acc.AddError(err)
		return
	}
	var tags []morse.Tag
	if f.FileTag != "" {
		tags = append(tags, morse.Tag{Key: f.FileTag, Value: filepath.Base(name)})
	}
	if f.FilePathTag != "" {
		if abs, err := filepath.Abs(name); err == nil {
			tags = append(tags, morse.Tag{Key: f.FilePathTag, Value: abs})
		}
	}
	err = parser.Parse(data, func(m morse.Metric) {
		for _, t := range tags {
			m = m.WithTag(t.Key, t.Value)
		}
		acc.AddMetric(m)
	})
	if err != nil {
		acc.AddError(fmt.Errorf("could not parse %q, %d entries refused: %w", name, parsers.Refused(err), err))
	}
}

// CheckEncoding refuses a character encoding that Decode does not know.
func CheckEncoding(enc string) error {
	switch strings.ToLower(enc) {
	case "", "utf-8", "utf8", "utf-16le", "utf-16be":
		return nil
	}
	return fmt.Errorf("unsupported encoding %q; use \"\", \"utf-8\", \"utf-16le\" or \"utf-16be\"", enc)
}

// Decode turns data in the given encoding into UTF-8, replacing invalid sequences with
// U+FFFD and dropping a byte order mark. The empty encoding leaves data as it is.
func Decode(enc string, data []byte) []byte {
	switch strings.ToLower(enc) {
	case "utf-8", "utf8":
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		if !utf8.Valid(data) {
			data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
		}
		return data
	case "utf-16le", "utf-16be":
		big := strings.EqualFold(enc, "utf-16be")
		units := make([]uint16, 0, len(data)/2)
		for i := 0; i+1 < len(data); i += 2 {
			if big {
				units = append(units, uint16(data[i])<<8|uint16(data[i+1]))
			} else {
				units = append(units, uint16(data[i+1])<<8|uint16(data[i]))
			}
		}
		if len(units) > 0 && units[0] == 0xFEFF {
			units = units[1:]
		}
		return []byte(string(utf16.Decode(units)))
	}
	return data
}
