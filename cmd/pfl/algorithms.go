package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"pfl/engine/fl"
)

// algorithmsCmd lists the registered algorithms with what they are and where they come from.
func algorithmsCmd(args []string, out io.Writer) error {
	fs := newFlags("algorithms", out)
	markdown := fs.Bool("markdown", false, "print docs/algorithms.md's Markdown table")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *markdown {
		fmt.Fprint(out, algorithmTable())
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "algorithm\twhat\tfrom\t")
	for _, a := range fl.Algorithms() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", a.Name, a.Summary, a.Paper)
	}
	return tw.Flush()
}

// algorithmTable is the registry as docs/algorithms.md's Markdown table.
func algorithmTable() string {
	var b strings.Builder
	fmt.Fprintln(&b, "| algorithm | what | from |")
	fmt.Fprintln(&b, "| --- | --- | --- |")
	for _, a := range fl.Algorithms() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.Name, a.Summary, a.Paper)
	}
	return b.String()
}
