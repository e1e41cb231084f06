package main

import (
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"pfl/configs"
)

// configsCmd lists the built-in configs (configs/*.yaml, embedded in the binary): each
// one's name for -c, what it runs, on which data and model, and the first line of its
// description. `pfl train -c NAME` runs one from any directory.
func configsCmd(args []string, out io.Writer) error {
	flags := newFlags("configs", out)
	if err := parse(flags, args); err != nil {
		return err
	}
	names, err := fs.Glob(configs.Files, "*.yaml")
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tdataset\tmodel\trounds\truns\tabout")
	for _, file := range names {
		cfg, err := loadConfig(file, nil)
		if err != nil {
			return fmt.Errorf("built-in config %s: %w", file, err)
		}
		runs := cfg.Algorithm.Name
		if len(cfg.Suite) > 0 {
			runs = strings.Join(memberLabels(cfg.Suite), ", ")
		}
		if len(cfg.Seeds) > 0 {
			runs += fmt.Sprintf(" × %d seeds", len(cfg.Seeds))
		}
		if len(cfg.Sweep) > 0 {
			var keys []string
			for _, a := range cfg.Sweep {
				keys = append(keys, a.Key)
			}
			runs += " × sweep of " + strings.Join(keys, ", ")
		}
		src, err := configs.Files.ReadFile(file)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(file, ".yaml")
		if file == configs.Demo {
			name += " (default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, cfg.Data.Dataset, cfg.Model.Preset, cfg.Train.Rounds, runs, firstComment(src))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nrun one with pfl train -c NAME (from any directory); pfl train -c NAME --print-config shows every key")
	return nil
}

// firstComment is the first line of a config's leading comment, cut to a table cell.
func firstComment(src []byte) string {
	line, _, _ := strings.Cut(string(src), "\n")
	line, ok := strings.CutPrefix(line, "#")
	if !ok {
		return ""
	}
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > 90 {
		line = string(r[:89]) + "…"
	}
	return line
}
