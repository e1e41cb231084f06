package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"pfl/engine/report"
	"pfl/engine/rundir"
)

// tsneCmd draws the t-SNE of the client embeddings of a run, or of every run of a suite or
// grid that has them.
func tsneCmd(args []string, out io.Writer) error {
	fs := newFlags("tsne", out)
	pos, err := parseArgs(fs, args, 1, 1, "pfl tsne <run, suite or grid dir>")
	if err != nil {
		return err
	}
	dir := pos[0]
	runs, err := rundir.Runs(dir)
	if err != nil {
		return err
	}
	dirs := []string{dir}
	if len(runs) > 1 || runs[0].Dir != dir {
		dirs = nil
		for _, r := range runs {
			if _, err := os.Stat(filepath.Join(r.Dir, "embeddings.csv")); err == nil {
				dirs = append(dirs, r.Dir)
			}
		}
		if len(dirs) == 0 {
			return fmt.Errorf("no run of %s has client embeddings (FedTP and TransFed runs write embeddings.csv)", dir)
		}
	}
	for _, d := range dirs {
		if err := report.EmbeddingTSNE(d); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s\n", filepath.Join(d, "embeddings_tsne.png"))
	}
	return nil
}
