package rundir

import (
	"fmt"
	"os"
	"path/filepath"

	"pfl/engine/config"
)

// RunDir is one run among the runs a directory holds (Runs).
type RunDir struct {
	Dir   string // the run's directory
	Label string // its name in figures and listings: the member, or its path within a grid
	// Checkpoint reports whether the run has written a checkpoint (a run without one never
	// finished a round, or was stopped before its first checkpoint).
	Checkpoint bool
	// Config and Place are the run's config and its place (member, sweep point) as its
	// suite or grid makes them; Single marks the directory given itself, whose config is
	// its own config.json (not read here).
	Config config.Config
	Place  config.Place
	Single bool
}

// Runs lists the runs that dir stands for, in the order they run, so that every command
// treats a suite and a grid alike: a suite's members, every run (sweep point, member, seed)
// of a grid, or dir itself for anything else (a run, or a folder that is not a pfl run
// directory, which the command reading it then names).
func Runs(dir string) ([]RunDir, error) {
	var out []RunDir
	switch {
	case IsGrid(dir):
		g, err := OpenGrid(dir)
		if err != nil {
			return nil, err
		}
		for _, l := range g.Runs {
			rel, err := filepath.Rel(g.Dir, l.Dir())
			if err != nil {
				return nil, err
			}
			out = append(out, RunDir{Dir: filepath.Join(dir, rel), Label: rel, Config: l.Config, Place: g.Place(l)})
		}
	case IsSuite(dir):
		cfg, err := LoadConfig(dir)
		if err != nil {
			return nil, err
		}
		members, err := config.Members(cfg)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			out = append(out, RunDir{Dir: filepath.Join(dir, m.Name), Label: m.Name, Config: m, Place: config.Place{Member: m.Name}})
		}
	default:
		out = []RunDir{{Dir: dir, Label: filepath.Base(dir), Single: true}}
	}
	for i := range out {
		out[i].Checkpoint = HasCheckpoint(out[i].Dir)
	}
	return out, nil
}

// Enclosing is the suite or grid directory that holds the run in dir as one of its runs
// (a suite's member, a grid's run), written as dir is (relative or not), or "" for a run
// of its own. Such a run is resumed with its suite or grid: alone, it would leave their
// results out of date, and with more rounds than theirs it would keep them from resuming.
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

// IsSuite reports whether the run directory dir holds a suite.
func IsSuite(dir string) bool {
	cfg, err := LoadConfig(dir)
	return err == nil && len(cfg.Suite) > 0 && !cfg.IsGrid()
}

// IsGrid reports whether the directory dir holds a grid (seeds or a sweep).
func IsGrid(dir string) bool {
	cfg, err := LoadGridConfig(dir)
	return err == nil && cfg.IsGrid()
}

// OpenGrid reads the grid in dir (its config.json as written) and lays out its runs.
func OpenGrid(dir string) (*config.Grid, error) {
	cfg, err := LoadGridConfig(dir)
	if err != nil {
		return nil, err
	}
	if !cfg.IsGrid() {
		return nil, fmt.Errorf("%s has neither seeds nor a sweep", dir)
	}
	g, err := config.NewGrid(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return g, nil
}

// FirstRuns are the directories of the grid in dir that stand for it in maps: the first
// seed of every member at the first sweep point (`pfl report` draws their maps when the
// grid has none).
func FirstRuns(dir string) ([]string, error) {
	g, err := OpenGrid(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range g.Runs {
		if l.Point == 0 && l.Seed == 0 {
			out = append(out, l.Dir())
		}
	}
	return out, nil
}

// NotAGrid refuses the directory of a grid for a command that reads one run (or suite),
// naming a run of the grid to give it instead.
func NotAGrid(dir, command string) error {
	cfg, err := LoadGridConfig(dir)
	if err != nil || !cfg.IsGrid() {
		return nil
	}
	example := "<run dir>"
	if g, err := config.NewGrid(cfg); err == nil {
		example = g.Runs[0].Dir()
	}
	return fmt.Errorf("%s holds a grid (seeds or a sweep) of runs; give %s one of them, e.g. %s %s", dir, command, command, example)
}
