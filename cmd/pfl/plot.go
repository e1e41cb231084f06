package main

import (
	"fmt"
	"io"
	"path/filepath"

	"pfl/engine/report"
	"pfl/engine/rundir"
)

// plotCmd draws the accuracy curves of several runs on one figure; a suite or grid
// directory stands for each of its runs.
func plotCmd(args []string, out io.Writer) error {
	fs := newFlags("plot", out)
	path := fs.String("out", "accuracy.png", "output file (.png or .svg)")
	dirs, err := parseArgs(fs, args, 1, -1, "pfl plot [-out file.png] <run, suite or grid dir>...")
	if err != nil {
		return err
	}
	var runs, labels []string
	for _, d := range dirs {
		rs, err := rundir.Runs(d)
		if err != nil {
			return err
		}
		for _, r := range rs {
			label := r.Label
			if len(rs) > 1 && len(dirs) > 1 { // two suites have members of the same name
				label = filepath.Base(d) + "/" + r.Label
			}
			runs, labels = append(runs, r.Dir), append(labels, label)
		}
	}
	if err := report.CompareLabelled(*path, runs, labels); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s\n", *path)
	return nil
}
