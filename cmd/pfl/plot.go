package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"pfl/engine/report"
	"pfl/engine/rundir"
)

// labels is a flag that may be given several times, one value each.
type labels []string

func (l *labels) String() string     { return strings.Join(*l, ", ") }
func (l *labels) Set(v string) error { *l = append(*l, v); return nil }

// plotCmd draws the accuracy curves of several runs on one figure; a suite or grid
// directory stands for each of its runs. -label names the runs of each argument in turn.
func plotCmd(args []string, out io.Writer) error {
	fs := newFlags("plot", out)
	path := fs.String("out", "accuracy.png", "output file (.png or .svg)")
	var names labels
	fs.Var(&names, "label", "the legend's name for the next run argument, once per argument in their order (a suite's or grid's runs: NAME/member); default: the folder's name, or the run's algorithm, dataset and seed where two folders share a name")
	dirs, err := parseArgs(fs, args, 1, -1, "pfl plot [-out file.png] [-label NAME]... <run, suite or grid dir>...")
	if err != nil {
		return err
	}
	if len(names) > 0 && len(names) != len(dirs) {
		return fmt.Errorf("plot: %d -label for %d run arguments; give one -label per run, suite or grid argument, in their order", len(names), len(dirs))
	}
	var runs, legend []string
	for i, d := range dirs {
		rs, err := rundir.Runs(d)
		if err != nil {
			return err
		}
		for _, r := range rs {
			label := r.Label
			switch {
			case len(names) > 0 && len(rs) == 1 && r.Single:
				label = names[i]
			case len(names) > 0:
				label = names[i] + "/" + r.Label
			case len(rs) > 1 && len(dirs) > 1: // two suites have members of the same name
				label = filepath.Base(d) + "/" + r.Label
			}
			runs, legend = append(runs, r.Dir), append(legend, label)
		}
	}
	if len(names) == 0 {
		legend = distinctLabels(runs, legend)
	}
	if err := report.CompareLabelled(*path, runs, legend); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s\n", *path)
	return nil
}

// distinctLabels is labels with each label that two runs share (run-a/seed-1 and
// run-b/seed-1 are both seed-1) replaced by its run's title (algorithm, dataset, sweep
// point, seed; report.RunTitle) and, where that is shared too, by its directory.
func distinctLabels(dirs, labels []string) []string {
	out := append([]string(nil), labels...)
	for _, describe := range []func(i int) string{
		func(i int) string {
			cfg, err := rundir.LoadConfig(dirs[i])
			if err != nil {
				return out[i]
			}
			if s, err := rundir.ReadSummary(dirs[i]); err == nil {
				return report.RunTitle(cfg, s.Member, s.Sweep)
			}
			return report.RunTitle(cfg, "", nil)
		},
		func(i int) string { return filepath.Clean(dirs[i]) },
	} {
		count := map[string]int{}
		for _, l := range out {
			count[l]++
		}
		for i := range out {
			if count[out[i]] > 1 {
				out[i] = describe(i)
			}
		}
	}
	return out
}
