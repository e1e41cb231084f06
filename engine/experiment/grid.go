package experiment

import (
	"context"
	"fmt"
	"path/filepath"

	"pfl/engine/config"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// GridResult is a finished grid: every run, the tables and where they were written.
type GridResult struct {
	Dir   string
	Runs  []*Result // in the grid's order: points, then members, then seeds
	Table string    // the Markdown tables, also written to Dir/results.md
}

// RunGrid runs a config with seeds or a sweep (config.Grid): every suite member (or the
// single run) at every sweep point once per seed, each in its own directory, then writes
// Out/Name/config.json, results.md (mean ± std across seeds; with a sweep, one table per
// metric with a row per point and a column per member), accuracy curves (a mean line and
// a min–max band across seeds) and, with a sweep, one plot per metric against the swept
// value. Every run's config is made and checked before anything is written. An existing
// directory is refused unless opts.Overwrite; an interrupted grid continues with
// ResumeGrid.
func RunGrid(ctx context.Context, cfg config.Config, opts Options) (*GridResult, error) {
	g, err := config.NewGrid(cfg)
	if err != nil {
		return nil, err
	}
	var runs []config.Config
	for _, l := range g.Runs {
		runs = append(runs, l.Config)
	}
	if err := dataThere(ctx, runs); err != nil {
		return nil, err
	}
	if err := rundir.Begin(g.Dir, "grid", g.Config, opts.Overwrite, opts.log()); err != nil {
		return nil, err
	}
	return runGrid(ctx, g, false, opts)
}

// ResumeGrid continues the grid in dir: finished runs are skipped (their summaries read
// back), runs with a checkpoint resume from it, runs never started start; the tables and
// plots are written at the end.
func ResumeGrid(ctx context.Context, dir string, opts Options) (*GridResult, error) {
	g, err := rundir.OpenGrid(dir)
	if err != nil {
		return nil, err
	}
	return runGrid(ctx, g, true, opts)
}

// CheckGrid makes every run of a config with seeds or a sweep and validates it, as RunGrid
// does before it writes anything: the first invalid value is an error naming the point,
// member and seed and the key.
func CheckGrid(cfg config.Config) error {
	_, err := config.NewGrid(cfg)
	return err
}

// runGrid runs (or, resuming, continues) every run of the grid, then has report write its
// outputs.
func runGrid(ctx context.Context, g *config.Grid, resume bool, opts Options) (*GridResult, error) {
	obs := opts.observer()
	res := &GridResult{Dir: g.Dir}
	count := newRunCounter(len(g.Runs))
	for _, l := range g.Runs {
		rel, _ := filepath.Rel(g.Dir, l.Dir())
		obs.Log(count.next(rel))
		if resume {
			if s, ok := rundir.Finished(l.Dir(), l.Config.Train.Rounds); ok {
				obs.Log("finished before; skipped")
				res.Runs = append(res.Runs, &Result{Dir: l.Dir(), Summary: *s})
				continue
			}
		}
		lo := Options{Observer: count.observe(obs), StopOnDivergence: opts.StopOnDivergence, Place: g.Place(l)}
		r, err := startOrResume(ctx, l.Config, resume, lo)
		if err != nil {
			where := g.Where(l.Point, l.Member, l.Seed)
			if ie := resumeAt(err, g.Dir); ie != err {
				return res, fmt.Errorf("%s: %s: %w", g.Dir, where, ie)
			}
			return res, fmt.Errorf("%s: %s: %w (continue the whole grid with: pfl train --resume %s)", g.Dir, where, err, g.Dir)
		}
		count.trained()
		res.Runs = append(res.Runs, r)
	}
	summaries := make([]*rundir.Summary, len(res.Runs))
	for i, r := range res.Runs {
		summaries[i] = &r.Summary
	}
	var err error
	res.Table, err = report.Grid(g, summaries)
	return res, err
}
