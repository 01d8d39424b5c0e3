package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/morse-agent/morse/config"
)

// configCheck is `morse config check FILE|DIR...`: it reads Telegraf configs (a directory
// as --config-directory reads it) and prints, per plugin and option, what morse does with
// it. It exits 0 when the config would run, 1 when it would not, 2 without arguments.
func configCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: morse config check FILE|DIR...")
		return exitBadArgs
	}
	var opts config.Options
	for _, a := range args {
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			opts.Dirs = append(opts.Dirs, a)
		} else {
			opts.Files = append(opts.Files, a)
		}
	}
	rep := config.Check(opts)
	counts := printFindings(stdout, rep.Findings)
	for _, w := range rep.Warnings {
		fmt.Fprintf(stdout, "warning  %s\n", w)
	}
	fmt.Fprintf(stdout, "\n%d plugins (%d unsupported), %d options: %d same, %d warned, %d differ, %d unsupported\n",
		counts.plugins, counts.unknown, counts.options, counts.by[config.StatusSame], counts.by[config.StatusWarned],
		counts.by[config.StatusDiffers], counts.by[config.StatusUnsupported])
	if len(rep.Problems) > 0 {
		fmt.Fprintf(stdout, "morse would not run this config: %d problems\n", len(rep.Problems))
		for _, e := range rep.Problems {
			fmt.Fprintf(stdout, "  %s\n", e)
		}
		return exitFailed
	}
	fmt.Fprintln(stdout, "morse would run this config")
	return exitOK
}

type findingCounts struct {
	plugins, unknown, options int
	by                        map[config.Status]int
}

// printFindings writes a header line per plugin and a line per option that is not the
// same as in Telegraf; options that are the same are counted only.
func printFindings(w io.Writer, fs []config.Finding) findingCounts {
	c := findingCounts{by: map[config.Status]int{}}
	for _, f := range fs {
		if f.Key == "" {
			c.plugins++
			if f.Status == config.StatusUnsupported {
				c.unknown++
			}
			fmt.Fprintf(w, "%s:%s  %s  %s", f.File, strconv.Itoa(f.Line), f.Plugin, f.Status)
			if f.Note != "" {
				fmt.Fprintf(w, ": %s", f.Note)
			}
			fmt.Fprintln(w)
			continue
		}
		c.options++
		c.by[f.Status]++
		if f.Status == config.StatusSame {
			continue
		}
		fmt.Fprintf(w, "  %-11s %s (line %d): %s", f.Status, f.Key, f.Line, f.Note)
		if f.Doc != "" {
			fmt.Fprintf(w, " [%s]", f.Doc)
		}
		fmt.Fprintln(w)
	}
	return c
}
