package grok

import (
	"regexp"
	"slices"
	"testing"
)

// FuzzNonCapturing: taking the unnamed groups out of an expression keeps its match and the
// positions of its named groups, whatever the expression.
func FuzzNonCapturing(f *testing.F) {
	for _, seed := range [][2]string{
		{`(a|b)+(?P<x>c)`, "xxabcab c"},
		{`[(]\((?P<x>[^)]*)\)`, "(( inside )"},
		{`[]()][^]()]\Q(lit\E(x)`, "](a(litx"},
		{`[[:alpha:](](?P<y>\d+)`, "b(12"},
		{`(?i)(A)(?P<n>b)\x{28}`, "ab("},
		{`\p{Greek}(\pN)[\[(]`, "α1["},
		{`((([0-9A-Fa-f]{1,4}:){7}([0-9A-Fa-f]{1,4}|:)))(%.+)?`, "1:2:3:4:5:6:7:8%eth0"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, expr, text string) {
		orig, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		rewritten, err := withoutUnnamedGroups(expr)
		if err != nil {
			t.Fatalf("%q compiles but: %v", expr, err)
		}
		re, err := regexp.Compile(rewritten)
		if err != nil {
			t.Fatalf("%q became %q: %v", expr, rewritten, err)
		}
		want, got := named(orig, text), named(re, text)
		if !slices.Equal(want, got) {
			t.Fatalf("%q became %q: on %q %v, want %v", expr, rewritten, text, got, want)
		}
	})
}

// named returns the match of re in text and the positions of its named groups.
func named(re *regexp.Regexp, text string) []int {
	loc := re.FindStringSubmatchIndex(text)
	if loc == nil {
		return nil
	}
	out := loc[:2:2]
	for i, name := range re.SubexpNames() {
		if name != "" {
			out = append(out, loc[2*i], loc[2*i+1])
		}
	}
	return out
}

// TestNonCapturingTakesOutUnnamedGroups: the built-in access log pattern keeps only its
// named groups.
func TestNonCapturingTakesOutUnnamedGroups(t *testing.T) {
	p, err := (&Options{}).patternsOnly()
	if err != nil {
		t.Fatal(err)
	}
	names := p[0].re.SubexpNames()[1:]
	if slices.Contains(names, "") {
		t.Fatalf("unnamed groups left in %v", names)
	}
	if len(names) != 11 {
		t.Fatalf("%d groups, want the 11 captures of COMBINED_LOG_FORMAT: %v", len(names), names)
	}
}
