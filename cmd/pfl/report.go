package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"pfl/engine/experiment"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// reportCmd writes a run's, suite's or grid's self-contained HTML report. Unless -maps=false
// it first draws the attention rollout and focal modulation maps (`pfl maps` with its
// defaults) where there are none: of the run or suite itself, or, for a grid, of the first
// seed of every member at its first sweep point. A model without maps, or maps that cannot
// be drawn, leave the report without them and say why.
func reportCmd(args []string, out io.Writer) error {
	fs := newFlags("report", out)
	maps := fs.Bool("maps", true, "draw maps first where the runs have none")
	pos, err := parseArgs(fs, args, 1, 1, "pfl report [-maps=false] <run, suite or grid dir>")
	if err != nil {
		return err
	}
	dir := pos[0]
	if *maps {
		drawMissingMaps(dir, out)
	}
	pages, err := report.Write(dir)
	for _, p := range pages {
		fmt.Fprintf(out, "wrote %s\n", p)
	}
	return err
}

// drawMissingMaps draws the maps the report shows where they are missing; a failure is
// reported and the report goes on without them.
func drawMissingMaps(dir string, out io.Writer) {
	dirs := []string{dir}
	if rundir.IsGrid(dir) {
		first, err := rundir.FirstRuns(dir)
		if err != nil {
			fmt.Fprintf(out, "maps: %v\n", err)
			return
		}
		dirs = first
	}
	for i, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "maps", "maps.json")); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "config.json")); err != nil {
			continue // not a run (yet): the report says what it can
		}
		// maps load every member's checkpoint and run its model: seconds each, so say so
		fmt.Fprintf(out, "drawing maps %d/%d: %s\n", i+1, len(dirs), d)
		start := time.Now()
		info, err := experiment.Maps(d, experiment.MapOptions{})
		if err == nil {
			fmt.Fprintf(out, "drew maps of %s in %.1f s\n", d, time.Since(start).Seconds())
		}
		if err != nil {
			fmt.Fprintf(out, "maps of %s: %v (the report has none)\n", d, err)
			continue
		}
		for _, m := range info.Members {
			if m.Skipped != "" {
				fmt.Fprintf(out, "maps of %s: %s: none (%s)\n", d, m.Name, m.Skipped)
			}
		}
	}
}
