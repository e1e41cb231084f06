package experiment

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"pfl/engine/dist"
	"slices"
	"strings"

	"pfl/engine/fl"
	"pfl/engine/internal/atomicfile"
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
func RunSuite(ctx context.Context, cfg Config, obs Observer) (*SuiteResult, error) {
	return RunSuiteWith(ctx, cfg, Options{Observer: obs})
}

// RunSuiteWith is RunSuite with options.
func RunSuiteWith(ctx context.Context, cfg Config, opts Options) (*SuiteResult, error) {
	cfg = cfg.Resolved()
	members, err := suiteMembers(cfg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Out, cfg.Name)
	if err := dataThere(ctx, members); err != nil {
		return nil, err
	}
	if !dist.Writes(dist.FromContext(ctx)) {
		// another rank of a suite across processes: the same members in the same order, in
		// step with rank 0, which checks, locks and writes the suite's directory
		return runMembers(ctx, dir, members, cfg.SuiteTable, false, opts)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	err = claimDir(dir, "suite", opts.Overwrite, opts.Observer)
	if err == nil {
		err = os.RemoveAll(dir)
	}
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = writeJSON(filepath.Join(dir, "config.json"), cfg)
	}
	unlock()
	if err != nil {
		return nil, err
	}
	return runMembers(ctx, dir, members, cfg.SuiteTable, false, opts)
}

// ResumeSuite continues the suite in dir: members with a checkpoint resume (a finished one
// is read back, its files untouched), members never started start, and the suite's table
// and plot are written at the end.
func ResumeSuite(ctx context.Context, dir string, opts Options) (*SuiteResult, error) {
	cfg, err := LoadRunConfig(dir)
	if err != nil {
		return nil, err
	}
	if len(cfg.Suite) == 0 {
		return nil, fmt.Errorf("%s is a single run, not a suite", dir)
	}
	members, err := suiteMembers(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return runMembers(ctx, filepath.Join(cfg.Out, cfg.Name), members, cfg.SuiteTable, true, opts)
}

// IsSuite reports whether the run directory dir holds a suite.
func IsSuite(dir string) bool {
	cfg, err := LoadRunConfig(dir)
	return err == nil && len(cfg.Suite) > 0 && !cfg.IsGrid()
}

// SuiteMembers returns the config of every member of cfg's suite, each as RunSuite runs
// it (Name is the member's label); seeds and a sweep are the grid's and are refused here.
func SuiteMembers(cfg Config) ([]Config, error) { return suiteMembers(cfg.Resolved()) }

// suiteMembers makes and validates every member's config.
func suiteMembers(cfg Config) ([]Config, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Suite) == 0 {
		return nil, fmt.Errorf("suite: no algorithms listed")
	}
	if cfg.IsGrid() {
		return nil, fmt.Errorf("seeds, sweep: a suite with seeds or a sweep runs with RunGrid")
	}
	var out []Config
	for _, entry := range cfg.Suite {
		mem, err := parseMember(entry)
		if err != nil {
			return nil, err
		}
		m := cfg
		m.Suite, m.SuiteTable = nil, ""
		if m, err = mem.apply(m); err != nil {
			return nil, err
		}
		m.Out, m.Name = filepath.Join(cfg.Out, cfg.Name), mem.label
		m = m.Resolved()
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("suite member %s: %w", mem.label, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// runMembers runs (or, resuming, continues) each member, then writes the suite's outputs.
// Across processes every rank runs every member, each member's rounds split across the
// ranks as a single run's; only rank 0 writes.
func runMembers(ctx context.Context, dir string, members []Config, suiteTable string, resume bool, opts Options) (*SuiteResult, error) {
	obs := opts.Observer
	if obs == nil {
		obs = quiet{}
	}
	res := &SuiteResult{Dir: dir}
	var dirs []string
	count := newRunCounter(len(members))
	for _, m := range members {
		alg := m.Name
		obs.Log(count.next(alg))
		mdir := filepath.Join(m.Out, m.Name)
		var r *Result
		var err error
		_, statErr := os.Stat(filepath.Join(mdir, checkpointFile))
		mo := Options{Observer: obs, StopOnDivergence: opts.StopOnDivergence, Place: Place{Member: m.Name}}
		switch {
		case resume && (statErr == nil || existingRun(mdir)):
			// without a checkpoint: a member stopped while starting starts again, one that
			// records rounds is refused (openRunDir)
			r, err = ResumeWith(ctx, m, mo)
		default:
			// a member that never wrote a checkpoint failed or was stopped while starting
			mo.Overwrite = resume
			r, err = RunWith(ctx, m, mo)
		}
		if err != nil {
			return res, fmt.Errorf("suite %s: %s: %w", filepath.Base(dir), alg, resumeAt(err, dir))
		}
		count.trained()
		res.Runs = append(res.Runs, r)
		dirs = append(dirs, r.Dir)
	}
	if !dist.Writes(dist.FromContext(ctx)) {
		return res, nil // rank 0 writes the suite's tables and plots
	}
	res.Table = table(res.Runs, members[0].Note) + novelTable(res.Runs, members[0].Novel.ConvergeWithin)
	if suiteTable == "sensitivity" {
		res.Table += sensitivityTable(members, res.Runs)
	}
	if err := atomicfile.WriteBytes(filepath.Join(res.Dir, "results.md"), []byte(res.Table)); err != nil {
		return res, err
	}
	if err := novelPlot(res.Dir, res.Runs); err != nil {
		return res, err
	}
	if err := gainDensity(res.Dir, res.Runs); err != nil {
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
// over the evaluations of the last 200 rounds, and the trend across them, which says whether
// the curve had flattened) and FedPerfix's (the last evaluation's per-client mean ± std), the
// evaluation protocol the runs used, the config's note under the table, and the resource
// table.
func table(runs []*Result, note string) string {
	var b strings.Builder
	protocols := map[string]bool{}
	for _, r := range runs {
		protocols[r.Summary.EvalProtocol] = true
	}
	for _, p := range []string{string(fl.EvalFedTP), string(fl.EvalFedPerfix)} {
		if protocols[p] {
			fmt.Fprintf(&b, "Evaluation protocol (train.eval_protocol): %s — %s.\n\n", p, protocolText[p])
		}
	}
	fmt.Fprintln(&b, "| algorithm | accuracy, FedTP protocol (mean ± std over last evals) | evals | trend over last evals | final per-client mean ± std | worst 10% | client updates | wall s |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		s := r.Summary
		if s.Diverged != 0 {
			fmt.Fprintf(&b, "| %s | diverged at round %d (training loss not finite) | – | – | – | – | %d | %.0f |\n",
				s.Name, s.Diverged, s.ClientUpdates, s.WallSeconds)
			continue
		}
		tail := fmt.Sprintf("%.2f ± %.2f", 100*s.TailMean, 100*s.TailStd)
		trend := fmt.Sprintf("%+.2f", 100*s.TailTrend)
		if s.TailEvals < 2 { // one evaluation has no spread or trend to show, not one of 0
			tail, trend = fmt.Sprintf("%.2f ± n/a", 100*s.TailMean), "n/a"
		}
		if s.Falling != "" {
			trend += " falling"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %.2f ± %.2f | %.2f | %d | %.0f |\n", s.Name, tail, s.TailEvals, trend,
			100*s.FinalMean, 100*s.FinalStd, 100*s.Worst10, s.ClientUpdates, s.WallSeconds)
	}
	fmt.Fprintln(&b, "\n"+trendText+" "+flagText)
	return b.String() + reading(runs) + noteText(note) + resourceTable(runs)
}

// protocolText says what each evaluation protocol means, for results.md.
var protocolText = map[string]string{
	string(fl.EvalFedTP):     "every client evaluated after the server update, with the new global shared part and its own personal part (FedTP's official code)",
	string(fl.EvalFedPerfix): "every client evaluated before the server update: the round's trained clients with their trained models, the others with the global shared part the round started from (FedPerfix's official code)",
}

// resourceTable is FedPerfix's resource columns (Table 2) for every run, with pfl's
// definitions (fl.Resources) and percentages of the fedavg member's when the suite has one.
func resourceTable(runs []*Result) string {
	var base *fl.Resources
	for _, r := range runs {
		if fl.Keeps(r.Summary.Name) == fl.KeepNothing { // the fedavg member
			base = &r.Summary.Resources
		}
	}
	pct := func(v, of float64) string {
		if base == nil || of == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.0f%%)", 100*v/of)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "\nResources per client: trainable parameters stored and kept personal; parameters sent up and down per sampled client per round; training FLOPs per sample = 2 × 3 × forward MACs × the algorithm's passes per sample.")
	fmt.Fprintln(&b, "\n| algorithm | stored params | personal params | up / down params per round | training MFLOPs per sample |")
	fmt.Fprintln(&b, "|---|---|---|---|---|")
	for _, r := range runs {
		res := r.Summary.Resources
		var bs, bu, bf float64
		if base != nil {
			bs, bu, bf = float64(base.StoredParams), float64(base.UpParams), base.TrainFLOPs
		}
		fmt.Fprintf(&b, "| %s | %d%s | %d | %d / %d%s | %.2f%s |\n", r.Summary.Name, res.StoredParams, pct(float64(res.StoredParams), bs),
			res.PersonalParams, res.UpParams, res.DownParams, pct(float64(res.UpParams), bu), res.TrainFLOPs/1e6, pct(res.TrainFLOPs, bf))
	}
	return b.String()
}

// layerNames are the rows of FedPerfix's Table 1 by the roles (other than the head) a
// partial member keeps local.
var layerNames = map[string]string{
	"patch_embed": "Patch Embedding", "pos_embed": "Position Embedding", "norm": "LayerNorm",
	"attn_out, attn_qkv": "Self-attention", "mlp": "MLP",
}

// sensitivityTable is FedPerfix's Table 1 from a suite's members: local and fedavg are
// "All Local" and "All Global"; a partial member whose local roles are {head} is the
// classification head; any other partial member is a row named by its local roles (other
// than the head), in the Stand-alone column without the head and the Combined column with
// it; Overall is the mean of the two. Accuracies are the final per-client mean ± std, the
// paper's protocol.
func sensitivityTable(members []Config, runs []*Result) string {
	type row struct {
		name            string
		alone, combined *Summary
	}
	var rows []*row
	find := func(name string) *row {
		for _, r := range rows {
			if r.name == name {
				return r
			}
		}
		r := &row{name: name}
		rows = append(rows, r)
		return r
	}
	for i, m := range members {
		s := &runs[i].Summary
		a := m.Algorithm
		switch {
		case fl.Keeps(a.Name) == fl.KeepEverything:
			find("All Local").alone = s
		case fl.Keeps(a.Name) == fl.KeepNothing:
			find("All Global").alone = s
		case fl.Keeps(a.Name) == fl.KeepListed && len(a.LocalBlocks) == 0:
			var rest []string
			head := false
			for _, r := range a.LocalRoles {
				if r == "head" {
					head = true
				} else if !slices.Contains(rest, r) {
					rest = append(rest, r)
				}
			}
			slices.Sort(rest)
			key := strings.Join(rest, ", ")
			switch {
			case key == "" && head:
				find("Classification Head").alone = s
			case head:
				find(cmp.Or(layerNames[key], key)).combined = s
			default:
				find(cmp.Or(layerNames[key], key)).alone = s
			}
		}
	}
	cell := func(s *Summary) string {
		if s == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f ± %.2f", 100*s.FinalMean, 100*s.FinalStd)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "\nSensitivity of each type of layer (FedPerfix Table 1): final per-client top-1 accuracy, mean ± std over clients; Overall is the mean of Stand-alone and Combined.")
	fmt.Fprintln(&b, "\n| type | stand-alone | combined (with the head) | overall |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, r := range rows {
		overall := "-"
		if r.alone != nil && r.combined != nil {
			overall = fmt.Sprintf("%.2f", 50*(r.alone.FinalMean+r.combined.FinalMean))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, cell(r.alone), cell(r.combined), overall)
	}
	return b.String()
}
