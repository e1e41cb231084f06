package rundir

import (
	"os"
	"path/filepath"
	"slices"
	"time"

	"pfl/engine/fl"
	"pfl/engine/tensorboard"
)

// TBDir is the run directory's folder of TensorBoard event files.
const TBDir = "tb"

// accuracyLimits are the per-client accuracy histogram's buckets: 20 of width 0.05 over
// [0, 1], the last one closed at 1.
var accuracyLimits = tensorboard.LinearLimits(0, 1, 20)

// tbLog writes a run's metrics as TensorBoard events to <run>/tb/, one event file per
// process that writes the run: scalars every round, and the per-client accuracy histogram
// at every evaluation. Its values are metrics.jsonl's (as float32).
type tbLog struct {
	w     *tensorboard.Writer
	novel []int
}

// openTB starts dir/tb afresh (a resumed run's earlier event files are removed, as
// metrics.jsonl is rewritten) and writes the rounds of history, stamped now.
func openTB(dir string, history []fl.RoundMetrics, novel []int) (*tbLog, error) {
	tb := filepath.Join(dir, TBDir)
	if err := os.RemoveAll(tb); err != nil {
		return nil, err
	}
	now := time.Now()
	w, err := tensorboard.Create(tb, now)
	if err != nil {
		return nil, err
	}
	l := &tbLog{w: w, novel: novel}
	for _, m := range history {
		if err := l.round(m, now); err != nil {
			w.Close()
			return nil, err
		}
	}
	return l, w.Flush()
}

// roundScalars are the scalars of round m: its training loss and samples, its time split,
// its throughput (samples over the round's data, train, aggregate and eval time) and, when
// it evaluated, the micro accuracy and the clients' mean and std.
func roundScalars(m fl.RoundMetrics) []tensorboard.Scalar {
	l := RoundLine(m)
	total := l.DataS + l.TrainS + l.AggS + l.EvalS
	sps := 0.0
	if total > 0 {
		sps = float64(l.Samples) / total
	}
	s := []tensorboard.Scalar{{Tag: "train/loss", Value: float64(l.TrainLoss)}, {Tag: "train/samples", Value: float64(l.Samples)},
		{Tag: "train/samples_per_sec", Value: sps}, {Tag: "time/data_s", Value: l.DataS}, {Tag: "time/train_s", Value: l.TrainS},
		{Tag: "time/aggregate_s", Value: l.AggS}, {Tag: "time/eval_s", Value: l.EvalS}}
	if l.Micro != nil {
		s = append(s, tensorboard.Scalar{Tag: "eval/accuracy", Value: float64(*l.Micro)},
			tensorboard.Scalar{Tag: "eval/client_mean", Value: float64(*l.Mean)},
			tensorboard.Scalar{Tag: "eval/client_std", Value: float64(*l.Std)})
	}
	return s
}

// trainedAccuracy is an evaluation's per-client accuracies without the novel clients.
func trainedAccuracy(acc []float64, novel []int) []float64 {
	var out []float64
	for c, a := range acc {
		if !slices.Contains(novel, c) {
			out = append(out, a)
		}
	}
	return out
}

// round writes round m's events at step m.Round + 1 (the plots' 1-based rounds).
func (l *tbLog) round(m fl.RoundMetrics, wall time.Time) error {
	step := int64(m.Round + 1)
	if err := l.w.Scalars(step, wall, roundScalars(m)...); err != nil {
		return err
	}
	if m.Eval != nil {
		h := tensorboard.NewHistogram(trainedAccuracy(m.Eval.Accuracy, l.novel), accuracyLimits)
		if err := l.w.Histogram(step, wall, "eval/client_accuracy", h); err != nil {
			return err
		}
	}
	return nil
}

// add writes round m and flushes, so TensorBoard sees every finished round.
func (l *tbLog) add(m fl.RoundMetrics) error {
	if err := l.round(m, time.Now()); err != nil {
		return err
	}
	return l.w.Flush()
}

// Close closes the event file.
func (l *tbLog) Close() error { return l.w.Close() }
