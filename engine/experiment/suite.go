package experiment

import (
	"context"
	"fmt"
	"path/filepath"

	"pfl/engine/config"
	"pfl/engine/dist"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// SuiteResult is a finished comparison: one run per algorithm, a results table and one
// convergence plot with every algorithm's curve.
type SuiteResult struct {
	Dir   string // Out/Name; the runs are its subdirectories, one per algorithm
	Runs  []*Result
	Table string // the Markdown table, also written to Dir/results.md
}

// RunSuite runs cfg once for each algorithm of cfg.Suite, everything else equal (same data,
// partition, model, seed and schedule), in Out/Name/<algorithm>, then writes
// Out/Name/config.json, results.md and accuracy.{png,svg}. Every member's config is
// checked before anything is written; an existing suite directory is refused (RunSuiteWith
// with Overwrite replaces it). An interrupted suite continues with ResumeSuite.
func RunSuite(ctx context.Context, cfg config.Config, obs Observer) (*SuiteResult, error) {
	return RunSuiteWith(ctx, cfg, Options{Observer: obs})
}

// RunSuiteWith is RunSuite with options.
func RunSuiteWith(ctx context.Context, cfg config.Config, opts Options) (*SuiteResult, error) {
	cfg = cfg.Resolved()
	members, err := config.Members(cfg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Out, cfg.Name)
	if err := dataThere(ctx, members); err != nil {
		return nil, err
	}
	// another rank of a suite across processes runs the same members in the same order, in
	// step with rank 0, which checks, locks and writes the suite's directory
	if dist.Writes(dist.FromContext(ctx)) {
		if err := rundir.Begin(dir, "suite", cfg, opts.Overwrite, opts.log()); err != nil {
			return nil, err
		}
	}
	return runMembers(ctx, dir, members, cfg.SuiteTable, false, opts)
}

// ResumeSuite continues the suite in dir: members with a checkpoint resume (a finished one
// is read back, its files untouched), members never started start, and the suite's table
// and plot are written at the end.
func ResumeSuite(ctx context.Context, dir string, opts Options) (*SuiteResult, error) {
	cfg, err := rundir.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if len(cfg.Suite) == 0 {
		return nil, fmt.Errorf("%s is a single run, not a suite", dir)
	}
	members, err := config.Members(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return runMembers(ctx, filepath.Join(cfg.Out, cfg.Name), members, cfg.SuiteTable, true, opts)
}

// runMembers runs (or, resuming, continues) each member, then has report write the suite's
// outputs. Across processes every rank runs every member, each member's rounds split
// across the ranks as a single run's; only rank 0 writes.
func runMembers(ctx context.Context, dir string, members []config.Config, suiteTable string, resume bool, opts Options) (*SuiteResult, error) {
	obs := opts.observer()
	res := &SuiteResult{Dir: dir}
	count := newRunCounter(len(members))
	for _, m := range members {
		obs.Log(count.next(m.Name))
		mo := Options{Observer: count.observe(obs), StopOnDivergence: opts.StopOnDivergence, Place: config.Place{Member: m.Name}}
		r, err := startOrResume(ctx, m, resume, mo)
		if err != nil {
			return res, fmt.Errorf("suite %s: %s: %w", filepath.Base(dir), m.Name, resumeAt(err, dir))
		}
		count.trained()
		res.Runs = append(res.Runs, r)
	}
	if !dist.Writes(dist.FromContext(ctx)) {
		return res, nil // rank 0 writes the suite's tables and plots
	}
	var err error
	res.Table, err = report.Suite(res.Dir, suiteTable, members, reportRuns(res.Runs))
	return res, err
}

// startOrResume runs cfg, one run of a suite or grid: resuming, a run that has written
// anything continues (without a checkpoint: a run stopped while starting starts again,
// one that records rounds is refused by openRunDir), and one never started starts,
// replacing what a failed start left.
func startOrResume(ctx context.Context, cfg config.Config, resume bool, opts Options) (*Result, error) {
	dir := filepath.Join(cfg.Out, cfg.Name)
	if resume && (rundir.HasCheckpoint(dir) || rundir.Existing(dir)) {
		return ResumeWith(ctx, cfg, opts)
	}
	opts.Overwrite = resume
	return RunWith(ctx, cfg, opts)
}

// reportRuns are the runs as report reads them: each run's summary, its clients' accuracy
// at its last evaluation and its novel clients.
func reportRuns(runs []*Result) []report.Run {
	out := make([]report.Run, len(runs))
	for i, r := range runs {
		out[i] = report.Run{Dir: r.Dir, Summary: r.Summary, Novel: r.Novel}
		for j := len(r.History) - 1; j >= 0; j-- {
			if e := r.History[j].Eval; e != nil {
				out[i].Final = e.Accuracy
				break
			}
		}
	}
	return out
}
