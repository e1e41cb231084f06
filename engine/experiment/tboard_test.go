package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pfl/engine/rundir"
	"pfl/engine/tensorboard"
)

// checkTB reads the run's event files back (framing and CRCs checked) and holds every
// value to metrics.jsonl: one file, the file_version event first, each round's scalars
// once at step round+1, and at each evaluation the histogram of the trained clients'
// accuracies.
func checkTB(t *testing.T, dir string, novel []int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, rundir.TBDir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("%d event files in %s, want 1", len(files), filepath.Join(dir, rundir.TBDir))
	}
	evs, err := tensorboard.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := rundir.ParseMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].FileVersion != tensorboard.FileVersion {
		t.Fatalf("no file_version event first: %+v", evs)
	}
	scalars := map[int64]map[string]float32{}
	histos := map[int64]*tensorboard.Histogram{}
	for _, ev := range evs[1:] {
		for _, v := range ev.Values {
			switch {
			case v.Simple != nil:
				if scalars[ev.Step] == nil {
					scalars[ev.Step] = map[string]float32{}
				}
				if _, dup := scalars[ev.Step][v.Tag]; dup {
					t.Fatalf("step %d: %s twice", ev.Step, v.Tag)
				}
				scalars[ev.Step][v.Tag] = *v.Simple
			case v.Histo != nil:
				if histos[ev.Step] != nil || v.Tag != "eval/client_accuracy" {
					t.Fatalf("step %d: histogram %s (twice?)", ev.Step, v.Tag)
				}
				histos[ev.Step] = v.Histo
			}
		}
	}
	if len(scalars) != len(lines) {
		t.Fatalf("scalars at %d steps, metrics.jsonl has %d rounds", len(scalars), len(lines))
	}
	evals := 0
	for _, l := range lines {
		step := int64(l.Round) // both count from 1
		got := scalars[step]
		total := l.DataS + l.TrainS + l.AggS + l.EvalS
		want := map[string]float64{"train/loss": float64(l.TrainLoss), "train/samples": float64(l.Samples),
			"train/samples_per_sec": float64(l.Samples) / total, "time/data_s": l.DataS, "time/train_s": l.TrainS,
			"time/aggregate_s": l.AggS, "time/eval_s": l.EvalS}
		if l.Micro != nil {
			want["eval/accuracy"], want["eval/client_mean"], want["eval/client_std"] = float64(*l.Micro), float64(*l.Mean), float64(*l.Std)
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: scalars %v, want the keys of %v", step, got, want)
		}
		for tag, w := range want {
			if g, ok := got[tag]; !ok || g != float32(w) {
				t.Errorf("step %d %s = %v, metrics.jsonl %v", step, tag, g, w)
			}
		}
		h := histos[step]
		if (h != nil) != (l.Micro != nil) {
			t.Fatalf("step %d: histogram %v, evaluated %v", step, h != nil, l.Micro != nil)
		}
		if h == nil {
			continue
		}
		evals++
		var acc []float64
		for c, a := range l.PerClient {
			if !slices.Contains(novel, c) {
				acc = append(acc, float64(a))
			}
		}
		counts := make([]float64, 20)
		var sum float64
		for _, a := range acc {
			counts[min(int(a*20+1e-12), 19)]++ // a bucket of width 0.05, the last closed at 1
			sum += a
		}
		if !slices.Equal(h.Counts, counts) || h.Num != float64(len(acc)) || math.Abs(h.Sum-sum) > 1e-12 ||
			h.Min != slices.Min(acc) || h.Max != slices.Max(acc) {
			t.Errorf("step %d: histogram %+v of %v", step, h, acc)
		}
	}
	if evals == 0 {
		t.Fatal("no evaluation to check")
	}
}

// TestTensorBoardEvents: a run writes one event file whose values are metrics.jsonl's; a
// resumed run starts the file afresh with every round once.
func TestTensorBoardEvents(t *testing.T) {
	cfg := smallRun(t.TempDir(), "tb")
	cfg.Data.HoldOut = 0.25
	cfg.Train.Rounds, cfg.Train.EvalEvery = 3, 2
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Novel) != 1 {
		t.Fatalf("novel clients %v, want one", res.Novel)
	}
	checkTB(t, res.Dir, res.Novel)
	more := cfg
	more.Train.Rounds = 5
	if res, err = ResumeWith(context.Background(), more, Options{}); err != nil {
		t.Fatal(err)
	}
	checkTB(t, res.Dir, res.Novel)
}
