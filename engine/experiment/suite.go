package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// Out/Name/results.md and Out/Name/accuracy.{png,svg}. An interrupted member run can be
// continued with Resume on its directory; RunSuite itself starts every member afresh.
func RunSuite(ctx context.Context, cfg Config, obs Observer) (*SuiteResult, error) {
	cfg.Defaults()
	if len(cfg.Suite) == 0 {
		return nil, fmt.Errorf("suite: no algorithms listed")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if obs == nil {
		obs = quiet{}
	}
	res := &SuiteResult{Dir: filepath.Join(cfg.Out, cfg.Name)}
	var dirs []string
	for _, alg := range cfg.Suite {
		member := cfg
		member.Suite = nil
		member.Algorithm.Name = alg
		member.Out, member.Name = res.Dir, alg
		obs.Log(fmt.Sprintf("== %s", alg))
		r, err := Run(ctx, member, obs)
		if err != nil {
			return res, fmt.Errorf("suite %s: %s: %w", cfg.Name, alg, err)
		}
		res.Runs = append(res.Runs, r)
		dirs = append(dirs, r.Dir)
	}
	res.Table = table(res.Runs) + novelTable(res.Runs)
	if err := os.WriteFile(filepath.Join(res.Dir, "results.md"), []byte(res.Table), 0o644); err != nil {
		return res, err
	}
	if err := novelPlot(res.Dir, res.Runs); err != nil {
		return res, err
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := Compare(filepath.Join(res.Dir, "accuracy"+ext), dirs); err != nil {
			return res, err
		}
	}
	return res, nil
}

// table writes both papers' protocols for every run: FedTP's (micro accuracy, mean ± std
// over the evaluations of the last 200 rounds) and FedPerfix's (the last evaluation's
// per-client mean ± std).
func table(runs []*Result) string {
	var b strings.Builder
	fmt.Fprintln(&b, "| algorithm | accuracy, FedTP protocol (mean ± std over last evals) | evals | final per-client mean ± std | worst 10% | wall s |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|")
	for _, r := range runs {
		s := r.Summary
		fmt.Fprintf(&b, "| %s | %.2f ± %.2f | %d | %.2f ± %.2f | %.2f | %.0f |\n", s.Name, 100*s.TailMean, 100*s.TailStd, s.TailEvals,
			100*s.FinalMean, 100*s.FinalStd, 100*s.Worst10, s.WallSeconds)
	}
	return b.String()
}
