package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"pfl/engine/config"
	"pfl/engine/fl"
)

// algorithmsCmd lists the registered algorithms with what they are and where they come
// from; given a name, it shows that algorithm's settings: every key it reads with its
// default.
func algorithmsCmd(args []string, out io.Writer) error {
	fs := newFlags("algorithms", out)
	markdown := fs.Bool("markdown", false, "print docs/algorithms.md's Markdown table")
	pos, err := parseArgs(fs, args, 0, 1, "pfl algorithms [flags] [name]")
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		return algorithmSettings(out, pos[0])
	}
	if *markdown {
		fmt.Fprint(out, algorithmTable())
		return nil
	}
	listAlgorithms(out, termWidth(out))
	return nil
}

// listAlgorithms writes every algorithm: its name, then what it does, its paper and the
// settings it reads, each wrapped to width in a column after the names.
func listAlgorithms(out io.Writer, width int) {
	col := 0
	for _, a := range fl.Algorithms() {
		col = max(col, len(a.Name)+2)
	}
	pad := strings.Repeat(" ", col)
	for _, a := range fl.Algorithms() {
		writeWrapped(out, width, a.Name+pad[len(a.Name):], a.Summary, col)
		writeWrapped(out, width, pad+"from: ", a.Paper, col+6)
		if keys := settingKeys(a, ""); keys != "" {
			writeWrapped(out, width, pad+"settings: ", keys, col+10)
		}
	}
	fmt.Fprintln(out, "\npfl algorithms NAME shows an algorithm's settings with their defaults")
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
// entry's Keys and own section, a section written as section.*), comma-separated; none
// when it reads none.
func settingKeys(a fl.Algorithm, none string) string {
	read := a.ReadKeys()
	if len(read) == 0 {
		return none
	}
	keys := make([]string, len(read))
	for i, k := range read {
		keys[i] = "algorithm." + k
		if sectionKey(k) {
			keys[i] += ".*"
		}
	}
	return strings.Join(keys, ", ")
}

// sectionKey reports whether algorithm.<k> is a section of keys rather than one key.
func sectionKey(k string) bool {
	for _, key := range config.Keys() {
		if strings.HasPrefix(key, "algorithm."+k+".") {
			return true
		}
	}
	return false
}

// algorithmSettings prints one algorithm: what it is, its paper, and every config key it
// reads beside algorithm.name (shared keys and its own section) with its default, as
// --print-config writes values (docs/config.md says what each means).
func algorithmSettings(out io.Writer, name string) error {
	a, err := fl.LookupAlgorithm(name)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s\nfrom: %s\n", a.Name, a.Summary, a.Paper)
	def := config.Default()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := 0
	for _, key := range config.Keys() {
		k, ok := strings.CutPrefix(key, "algorithm.")
		if !ok || !a.Reads(k) {
			continue
		}
		val, err := def.ValueJSON(key)
		if err != nil {
			val = "?"
		}
		if val == "null" {
			val = "unset (docs/config.md says what it follows)"
		}
		if n == 0 {
			fmt.Fprintln(tw, "\nsetting\tdefault\t")
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", key, val)
		n++
	}
	if n == 0 {
		fmt.Fprintln(tw, "settings: none beside algorithm.name")
	}
	return tw.Flush()
}
