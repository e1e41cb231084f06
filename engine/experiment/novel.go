package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/rundir"
)

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
func studyNovel(dir string, cfg config.Config, run *fl.Run) ([]rundir.NovelSummary, error) {
	if len(run.Novel()) == 0 {
		return nil, nil
	}
	modes := []string{""}
	if run.Generates() {
		modes = cfg.Novel.Tune
	}
	var out []rundir.NovelSummary
	var csv strings.Builder
	fmt.Fprintln(&csv, "tuned,epoch,micro,mean,std,loss")
	for _, mode := range modes {
		c, err := run.FineTuneNovel(cfg.Novel.NovelStudy(mode))
		if err != nil {
			return nil, fmt.Errorf("novel clients: %w", err)
		}
		out = append(out, rundir.NovelSummary{Tuned: c.Tuned, Micro: c.Micro, Mean: c.Mean, Std: c.Std,
			Converged: epochsToConverge(c.Micro, cfg.Novel.ConvergeWithin)})
		for e := range c.Micro {
			fmt.Fprintf(&csv, "%s,%d,%.6f,%.6f,%.6f,%.6f\n", c.Tuned, e, c.Micro[e], c.Mean[e], c.Std[e], c.Loss[e])
		}
	}
	return out, os.WriteFile(filepath.Join(dir, "novel.csv"), []byte(csv.String()), 0o644)
}
