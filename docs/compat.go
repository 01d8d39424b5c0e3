// Package docs holds the documentation that the binary itself reads: the Telegraf
// compatibility page, whose tables `morse config check` quotes, so that what the check says
// about an option is what the page says.
package docs

import (
	_ "embed"
	"strings"
	"unicode"
)

// TelegrafCompat is docs/telegraf-compat.md.
//
//go:embed telegraf-compat.md
var TelegrafCompat string

// CompatPage is the page's path from the repository's root, for links.
const CompatPage = "docs/telegraf-compat.md"

// Row is one option of a table of the compatibility page.
type Row struct {
	Section string // the heading: "inputs.tail", "[agent]", "Options every plugin takes"
	Anchor  string // the heading's anchor, as GitHub makes it: "inputstail"
	Kind    string // for the table of options every plugin takes: "all", "inputs", "outputs"...
	Key     string // one key of the row's first cell, without backticks
	Status  string // the status cell: "same", "warned", "different", "same / different"...
	Note    string // the notes cell
}

// CompatRows returns every option row of the page's tables. A cell that names several keys
// ("read_timeout, write_timeout") gives a row for each; rows about a behaviour rather than
// a key ("(parsing)") are left out.
func CompatRows() []Row {
	var rows []Row
	section, anchor := "", ""
	for line := range strings.Lines(TelegrafCompat) {
		line = strings.TrimRight(line, "\n")
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section, anchor = h, Anchor(h)
			continue
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		kind := ""
		if len(cells) == 4 {
			kind, cells = cells[0], cells[1:]
		}
		if len(cells) != 3 || cells[0] == "key" {
			continue
		}
		for _, key := range strings.Split(cells[0], ", ") {
			key = strings.Trim(key, "`")
			if key == "" || strings.ContainsAny(key[:1], "([") || strings.Contains(key, " ") {
				continue
			}
			rows = append(rows, Row{Section: section, Anchor: anchor, Kind: kind, Key: key, Status: cells[1], Note: cells[2]})
		}
	}
	return rows
}

// Anchor makes a heading's anchor as GitHub does: lower case, spaces to dashes, other
// punctuation dropped.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
