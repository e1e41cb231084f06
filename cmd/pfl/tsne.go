package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"pfl/engine/experiment"
)

// tsneCmd draws the t-SNE of the client embeddings of a run, or of every suite member that
// has them.
func tsneCmd(args []string, out io.Writer) error {
	fs := newFlags("tsne", out)
	pos, err := parseArgs(fs, args, 1, 1, "pfl tsne <run or suite dir>")
	if err != nil {
		return err
	}
	dir := pos[0]
	dirs := []string{dir}
	if experiment.IsSuite(dir) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		dirs = nil
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "embeddings.csv")); e.IsDir() && err == nil {
				dirs = append(dirs, filepath.Join(dir, e.Name()))
			}
		}
		if len(dirs) == 0 {
			return fmt.Errorf("no member of %s has client embeddings (FedTP and TransFed runs write embeddings.csv)", dir)
		}
	}
	for _, d := range dirs {
		if err := experiment.EmbeddingTSNE(d); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s\n", filepath.Join(d, "embeddings_tsne.png"))
	}
	return nil
}
