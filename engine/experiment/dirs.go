package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"pfl/engine/data/fetch"
)

// RunDir is one run among the runs a directory holds (Runs).
type RunDir struct {
	Dir   string // the run's directory
	Label string // its name in figures and listings: the member, or its path within a grid
	// Checkpoint reports whether the run has written a checkpoint (a run without one never
	// finished a round, or was stopped before its first checkpoint).
	Checkpoint bool
}

// Runs lists the runs that dir stands for, in the order they run, so that every command
// treats a suite and a grid alike: a suite's members, every run (sweep point, member, seed)
// of a grid, or dir itself for anything else (a run, or a folder that is not a pfl run
// directory, which the command reading it then names).
func Runs(dir string) ([]RunDir, error) {
	var dirs, labels []string
	switch {
	case IsGrid(dir):
		g, err := openGrid(dir)
		if err != nil {
			return nil, err
		}
		for _, l := range g.leaves {
			rel, err := filepath.Rel(g.dir, l.dir())
			if err != nil {
				return nil, err
			}
			dirs, labels = append(dirs, filepath.Join(dir, rel)), append(labels, rel)
		}
	case IsSuite(dir):
		cfg, err := LoadRunConfig(dir)
		if err != nil {
			return nil, err
		}
		members, err := suiteMembers(cfg)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			dirs, labels = append(dirs, filepath.Join(dir, m.Name)), append(labels, m.Name)
		}
	default:
		dirs, labels = []string{dir}, []string{filepath.Base(dir)}
	}
	out := make([]RunDir, len(dirs))
	for i, d := range dirs {
		_, err := os.Stat(filepath.Join(d, checkpointFile))
		out[i] = RunDir{Dir: d, Label: labels[i], Checkpoint: err == nil}
	}
	return out, nil
}

// Enclosing is the suite or grid directory that holds the run in dir as one of its runs
// (a suite's member, a grid's run), written as dir is (relative or not), or "" for a run
// of its own. Such a run is resumed with
// its suite or grid: alone, it would leave their results out of date, and with more
// rounds than theirs it would keep them from resuming.
func Enclosing(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	// the directory above, absolute and as dir gives it; a grid's run lies up to three
	// levels down (point, member, seed)
	up, given := abs, filepath.Clean(dir)
	for range 3 {
		up, given = filepath.Dir(up), filepath.Dir(given)
		if _, err := os.Stat(filepath.Join(up, "config.json")); err != nil {
			continue // a grid's point or member folder
		}
		runs, err := Runs(up)
		if err != nil {
			return ""
		}
		for _, r := range runs {
			if a, err := filepath.Abs(r.Dir); err == nil && a == abs {
				return given
			}
		}
		return "" // the nearest config.json above is not a suite or grid of this run
	}
	return ""
}

// dataThere checks, before a suite or grid writes anything, that the data of each of its
// runs is where data.dataset says or in the data folder (a run with data.download fetches
// it when it starts), so that missing data is an error naming pfl data get, not a
// directory of a start that failed.
func dataThere(ctx context.Context, runs []Config) error {
	seen := map[string]bool{}
	for _, c := range runs {
		if c.Data.Download || seen[c.Data.Dataset] {
			continue
		}
		seen[c.Data.Dataset] = true
		if _, err := fetch.Resolve(ctx, c.Data.Dataset, false, fetch.Options{}); err != nil {
			return fmt.Errorf("%s: data.dataset: %w", c.Name, err)
		}
	}
	return nil
}
