package main

import (
	"fmt"
	"io"

	"pfl/engine/experiment"
)

// reportCmd writes a run's or suite's self-contained HTML report.
func reportCmd(args []string, out io.Writer) error {
	fs := newFlags("report", out)
	if err := parseArgs(fs, args, 1, 1, "pfl report <run or suite dir>"); err != nil {
		return err
	}
	pages, err := experiment.Report(fs.Arg(0))
	for _, p := range pages {
		fmt.Fprintf(out, "wrote %s\n", p)
	}
	return err
}
