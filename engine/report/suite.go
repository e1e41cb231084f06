// Package report draws what run directories hold: the tables of a suite and of a grid
// (results.md, with the reading under a suite's table), the figures (convergence curves,
// per-client accuracies, a sweep's metrics against its values, gain densities, novel
// clients, t-SNE of client embeddings, attention and focal modulation maps), the HTML
// report pages, and CSV exports. Runs write data (engine/rundir's files); the code that
// ran them calls report to draw, so that training never imports a plotting library.
package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/rundir"
)

// Run is one finished run as a suite's tables and figures read it.
type Run struct {
	Dir     string
	Summary rundir.Summary
	// Final is every client's accuracy at the run's last evaluation (nil without one).
	Final []float64
	Novel []int // the clients held out of training
}

// Suite writes a finished suite's outputs into dir: results.md (both papers' protocols for
// every member, the reading under the table, the novel clients' table, FedPerfix's Table 1
// when suite_table is sensitivity, the resources), the novel clients' and gain-density
// figures where they apply, and accuracy.{png,svg} with every member's curve. members are
// the members' configs (their order is runs'), suiteTable the suite's suite_table; it
// returns the Markdown tables.
func Suite(dir, suiteTable string, members []config.Config, runs []Run) (string, error) {
	text := table(runs, members[0].Note) + novelTable(runs, members[0].Novel.ConvergeWithin)
	if suiteTable == "sensitivity" {
		text += sensitivityTable(members, runs)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, "results.md"), []byte(text)); err != nil {
		return text, err
	}
	if err := novelPlot(dir, runs); err != nil {
		return text, err
	}
	if err := gainDensity(dir, runs); err != nil {
		return text, err
	}
	var dirs []string
	for _, r := range runs {
		dirs = append(dirs, r.Dir)
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := Compare(filepath.Join(dir, "accuracy"+ext), dirs); err != nil {
			return text, err
		}
	}
	return text, nil
}

// table writes both papers' protocols for every run: FedTP's (micro accuracy, mean ± std
// over the evaluations of the last 200 rounds, and the trend across them, which says whether
// the curve had flattened) and FedPerfix's (the last evaluation's per-client mean ± std), the
// evaluation protocol the runs used, the config's note under the table, and the resource
// table.
func table(runs []Run, note string) string {
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
func resourceTable(runs []Run) string {
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
func sensitivityTable(members []config.Config, runs []Run) string {
	type row struct {
		name            string
		alone, combined *rundir.Summary
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
	cell := func(s *rundir.Summary) string {
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

// novelTable is the suite's novel-client table: novel clients' micro accuracy per
// fine-tuning epoch and the epochs to converge (TransFed Table 4), one row per algorithm
// and tuned part; empty without novel clients.
func novelTable(runs []Run, within float64) string {
	var b strings.Builder
	for _, r := range runs {
		for _, n := range r.Summary.Novel {
			if b.Len() == 0 {
				fmt.Fprint(&b, "\nNovel clients (held out of training): accuracy after each fine-tuning epoch\n\n| algorithm (tuned) |")
				for e := range n.Micro {
					fmt.Fprintf(&b, " epoch %d |", e)
				}
				fmt.Fprintf(&b, " epochs to converge (within %.3g points of the best) |\n|---|", 100*within)
				for range n.Micro {
					fmt.Fprint(&b, "---|")
				}
				fmt.Fprintln(&b, "---|")
			}
			fmt.Fprintf(&b, "| %s (%s) |", r.Summary.Name, n.Tuned)
			for _, a := range n.Micro {
				fmt.Fprintf(&b, " %.2f |", 100*a)
			}
			fmt.Fprintf(&b, " %d |\n", n.Converged)
		}
	}
	return b.String()
}

// novelPlot draws the novel clients' accuracy per fine-tuning epoch, one line per
// algorithm and tuned part, into dir/novel.{png,svg} (the paper's Fig. 8); nothing
// without novel clients.
func novelPlot(dir string, runs []Run) error {
	var lines []any
	for _, r := range runs {
		for _, n := range r.Summary.Novel {
			var xy plotter.XYs
			for e, a := range n.Micro {
				xy = append(xy, plotter.XY{X: float64(e), Y: 100 * a})
			}
			lines = append(lines, fmt.Sprintf("%s (%s)", r.Summary.Name, n.Tuned), xy)
		}
	}
	if lines == nil {
		return nil
	}
	return save(dir, "novel", "novel clients: test accuracy while fine-tuning", "fine-tuning epoch", "accuracy, %", lines...)
}
