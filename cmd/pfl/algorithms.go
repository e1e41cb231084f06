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
	fmt.Fprintln(tw, "algorithm\twhat\tfrom\tsettings\t")
	for _, a := range fl.Algorithms() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", a.Name, a.Summary, a.Paper, settingKeys(a, "-"))
	}
	return tw.Flush()
}

// algorithmTable is the registry as docs/algorithms.md's Markdown table.
func algorithmTable() string {
	var b strings.Builder
	fmt.Fprintln(&b, "| algorithm | what | from | settings |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- |")
	for _, a := range fl.Algorithms() {
		keys := settingKeys(a, "")
		if keys != "" {
			keys = "`" + strings.ReplaceAll(keys, ", ", "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", a.Name, a.Summary, a.Paper, keys)
	}
	return b.String()
}

// settingKeys are the config keys an algorithm reads beside algorithm.name (its registry
// entry's Keys, a section written as section.*), comma-separated; none when it reads none.
func settingKeys(a fl.Algorithm, none string) string {
	if len(a.Keys) == 0 {
		return none
	}
	keys := make([]string, len(a.Keys))
	for i, k := range a.Keys {
		keys[i] = "algorithm." + k
		if sectionKey(k) {
			keys[i] += ".*"
		}
	}
	return strings.Join(keys, ", ")
}

// sectionKey reports whether algorithm.<k> is a section of keys rather than one key.
func sectionKey(k string) bool {
	for key := range configFields() {
		if strings.HasPrefix(key, "algorithm."+k+".") {
			return true
		}
	}
	return false
}
