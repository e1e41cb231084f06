package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/plotter"

	"pfl/engine/fl"
)

// NovelSummary is one novel-client study: the held-out clients' accuracy per fine-tuning
// epoch (index 0: before fine-tuning).
type NovelSummary struct {
	Tuned string    `json:"tuned"` // embedding, hypernetwork, personal (the algorithm's personal parameters) or model
	Micro []float64 `json:"micro"` // Σ correct / Σ predictions over the novel clients
	Mean  []float64 `json:"mean"`  // mean of their accuracies
	Std   []float64 `json:"std"`
	// Converged is the epochs to converge: the first epoch from which Micro stays within
	// novel.converge_within of where fine-tuning ends (0: no fine-tuning needed).
	Converged int `json:"epochs_to_converge"`
}

// epochsToConverge is the first epoch e with |acc[e'] − acc[last]| ≤ within for every
// e' ≥ e: from when on the curve stays near where fine-tuning ends. A curve still moving
// at the last epoch converges there (a lower bound: more epochs might have moved it).
func epochsToConverge(acc []float64, within float64) int {
	if len(acc) == 0 {
		return 0
	}
	end := acc[len(acc)-1]
	e := len(acc) - 1
	for e > 0 && math.Abs(acc[e-1]-end) <= within {
		e--
	}
	return e
}

// studyNovel runs the novel-client study of a finished run (FedTP paper Fig. 8), once per
// novel.tune mode for FedTP and once for other algorithms, and writes novel.csv.
func studyNovel(dir string, cfg Config, run *fl.Run) ([]NovelSummary, error) {
	if len(run.Novel()) == 0 {
		return nil, nil
	}
	modes := []string{""}
	if run.Generates() {
		modes = cfg.Novel.Tune
	}
	var out []NovelSummary
	var csv strings.Builder
	fmt.Fprintln(&csv, "tuned,epoch,micro,mean,std,loss")
	for _, mode := range modes {
		c, err := run.FineTuneNovel(fl.NovelConfig{Epochs: cfg.Novel.Epochs, LR: realOf(cfg.Novel.LR), Mode: mode})
		if err != nil {
			return nil, fmt.Errorf("novel clients: %w", err)
		}
		out = append(out, NovelSummary{Tuned: c.Tuned, Micro: c.Micro, Mean: c.Mean, Std: c.Std,
			Converged: epochsToConverge(c.Micro, cfg.Novel.ConvergeWithin)})
		for e := range c.Micro {
			fmt.Fprintf(&csv, "%s,%d,%.6f,%.6f,%.6f,%.6f\n", c.Tuned, e, c.Micro[e], c.Mean[e], c.Std[e], c.Loss[e])
		}
	}
	return out, os.WriteFile(filepath.Join(dir, "novel.csv"), []byte(csv.String()), 0o644)
}

// novelTable is the suite's novel-client table: novel clients' micro accuracy per
// fine-tuning epoch and the epochs to converge (TransFed Table 4), one row per algorithm
// and tuned part; empty without novel clients.
func novelTable(runs []*Result, within float64) string {
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
func novelPlot(dir string, runs []*Result) error {
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
