package rundir

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"pfl/engine/config"
	"pfl/engine/fl"
)

// SummaryFile is a finished run's summary (Summary).
const SummaryFile = "summary.json"

// Summary holds the numbers of both papers' evaluation protocols.
type Summary struct {
	Name string `json:"name"`
	// Algorithm (algorithm.name), Seed, Member (the suite member's label; "" for a run of
	// its own) and Sweep (the sweep point's values; none without a sweep) say which run of
	// an experiment this is. A summary.json written before pfl recorded them lacks them
	// (read as "", 0 and none); the run's config.json and its place in its suite or grid
	// say the same.
	Algorithm string              `json:"algorithm,omitempty"`
	Seed      uint64              `json:"seed"`
	Member    string              `json:"member,omitempty"`
	Sweep     []config.SweepValue `json:"sweep,omitempty"`
	Rounds    int                 `json:"rounds"`
	// FedPerfix's protocol: the last evaluation's per-client accuracies.
	FinalMicro float64 `json:"final_micro"` // Σ correct / Σ samples
	FinalMean  float64 `json:"final_mean"`
	FinalStd   float64 `json:"final_std"`
	P10        float64 `json:"p10"`
	P50        float64 `json:"p50"`
	P90        float64 `json:"p90"`
	Worst10    float64 `json:"worst10"` // mean accuracy of the worst 10% of clients
	// FedTP's protocol: micro accuracy averaged over the evaluations of the last
	// train.tail_rounds rounds (200 in the paper; every evaluation when the run is shorter).
	TailMean  float64 `json:"tail_mean"`
	TailStd   float64 `json:"tail_std"`
	TailEvals int     `json:"tail_evals"`
	// TailTrend is the rise of the least-squares line through those evaluations (micro
	// accuracy against round) across the rounds they span: near 0 (within a few TailStd) a
	// curve that has flattened, clearly positive one still rising when the run stopped. 0
	// with fewer than two evaluations in the window.
	TailTrend float64 `json:"tail_trend"`
	// Best is the highest micro accuracy of any evaluation of the run, after BestRound
	// (from 1): with the last evaluation it tells a curve that collapsed from one that
	// never rose.
	Best      float64 `json:"best_micro"`
	BestRound int     `json:"best_round"`
	// Falling says why the run's curve counts as falling (empty when it does not): its
	// last evaluation 10 or more points under its best, or its tail trend below −2 × the
	// tail's spread and below −1 point (see falling). Tables, the report and the reading
	// under a suite's table flag such a run.
	Falling string `json:"falling,omitempty"`

	// ClientUpdates is the number of local trainings the run did: the clients trained, summed
	// over its rounds (Local on its all-clients schedule trains every client every round).
	ClientUpdates int `json:"client_updates"`

	// SamplesPerSec and WallSeconds are over all the run's rounds: a resumed run's
	// segments are summed (each checkpoint records the time of the rounds it holds).
	SamplesPerSec float64 `json:"samples_per_sec"`
	WallSeconds   float64 `json:"wall_seconds"`

	// Diverged is the round (from 1) whose training loss was not finite, which ended the
	// run after the rounds of Rounds; 0 for a run that did not diverge.
	Diverged int `json:"diverged_at_round,omitempty"`

	// Novel is the novel-client study (data.holdout > 0), one entry per tuned part.
	Novel []NovelSummary `json:"novel,omitempty"`

	// EvalProtocol is train.eval_protocol: when the evaluations saw each client's model.
	EvalProtocol string `json:"eval_protocol"`
	// Resources is one client's storage, computation and communication.
	Resources fl.Resources `json:"resources"`
}

// NovelSummary is one novel-client study: the held-out clients' accuracy per fine-tuning
// epoch (index 0: before fine-tuning).
type NovelSummary struct {
	Tuned string    `json:"tuned"` // embedding, hypernetwork, personal (the algorithm's personal parameters) or model
	Micro []float64 `json:"micro"` // Σ correct / Σ predictions over the novel clients
	Mean  []float64 `json:"mean"`  // mean of their accuracies
	Std   []float64 `json:"std"`
	// Converged is the epochs to converge: the first epoch from which Micro stays within
	// novel.converge_within of where fine-tuning ends (0: no fine-tuning needed). The run
	// computes it for its suite's table; summary.json does not hold it (read back, 0).
	Converged int `json:"-"`
}

// Named records in s which run of its experiment it summarizes: cfg's algorithm and seed
// and the place.
func (s *Summary) Named(cfg config.Config, p config.Place) {
	s.Algorithm, s.Seed, s.Member, s.Sweep = cfg.Algorithm.Name, cfg.Seed, p.Member, p.Sweep
}

// WriteSummary writes dir/summary.json.
func WriteSummary(dir string, s Summary) error {
	return WriteJSON(filepath.Join(dir, SummaryFile), s)
}

// ReadSummary reads dir/summary.json.
func ReadSummary(dir string) (Summary, error) {
	var s Summary
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, SummaryFile), err)
	}
	return s, nil
}

// Finished is the summary of the run in dir when it has done its rounds (train.rounds),
// or diverged (a diverged run is finished too: resuming it would diverge again at the same
// round); false when its summary is missing, unreadable or of a run that stopped early.
func Finished(dir string, rounds int) (*Summary, bool) {
	s, err := ReadSummary(dir)
	if err != nil || (s.Rounds != rounds && s.Diverged == 0) {
		return nil, false
	}
	return &s, true
}

// DivergedAt is the round at which the run in dir diverged (its summary.json), or 0 when
// it did not or has no summary.
func DivergedAt(dir string) int {
	s, err := ReadSummary(dir)
	if err != nil {
		return 0
	}
	return s.Diverged
}

// Summarize computes both protocols' numbers; the per-client percentiles leave out the
// novel clients, which never trained (EvalResult's own statistics already do).
func Summarize(name string, h []fl.RoundMetrics, tailRounds int, novel []int) Summary {
	s := Summary{Name: name, Rounds: len(h)}
	var last *fl.EvalResult
	var tail, tailRound []float64
	for _, m := range h {
		s.ClientUpdates += len(m.Clients)
		if m.Eval == nil {
			continue
		}
		last = m.Eval
		if s.BestRound == 0 || m.Eval.Micro > s.Best || math.IsNaN(s.Best) {
			s.Best, s.BestRound = m.Eval.Micro, m.Round+1
		}
		// the official code averages the evaluations of rounds (1-based) >= test_round =
		// rounds - 200: 41 evaluations at 1,500 rounds, every 5, from round 1,300 on
		if m.Round+1 >= len(h)-tailRounds {
			tail = append(tail, m.Eval.Micro)
			tailRound = append(tailRound, float64(m.Round+1))
		}
	}
	if last == nil {
		return s
	}
	s.FinalMicro, s.FinalMean, s.FinalStd = last.Micro, last.Mean, last.Std
	var acc []float64
	for c, a := range last.Accuracy {
		if !slices.Contains(novel, c) {
			acc = append(acc, a)
		}
	}
	if len(acc) == 0 { // every client is novel (a crafted history): no percentiles
		return s
	}
	slices.Sort(acc)
	q := func(p float64) float64 { return acc[min(int(p*float64(len(acc))), len(acc)-1)] }
	s.P10, s.P50, s.P90 = q(0.1), q(0.5), q(0.9)
	worst := max(len(acc)/10, 1)
	for _, a := range acc[:worst] {
		s.Worst10 += a / float64(worst)
	}
	for _, a := range tail {
		s.TailMean += a / float64(len(tail))
	}
	for _, a := range tail {
		s.TailStd += (a - s.TailMean) * (a - s.TailMean) / float64(len(tail))
	}
	s.TailStd = math.Sqrt(s.TailStd)
	s.TailEvals = len(tail)
	s.TailTrend = trend(tailRound, tail)
	s.Falling = falling(s, trendNoise(tailRound, s.TailMean, predictions(last, novel)))
	return s
}

// predictions is the number of test predictions an evaluation's micro accuracy counts (the
// clients that train); 0 when the evaluation does not record them (a crafted history).
func predictions(e *fl.EvalResult, novel []int) int {
	n := 0
	for c, k := range e.Count {
		if !slices.Contains(novel, c) {
			n += k
		}
	}
	return n
}

// trendNoise is the standard error of a tail trend (see trend) that the test set's sampling
// alone gives: each evaluation's micro accuracy p over n predictions has a binomial
// standard error √(p(1−p)/n), and the least-squares rise across rounds x has that times
// span(x)/√Σ(x−x̄)². 0 when n or the rounds cannot give one.
func trendNoise(x []float64, p float64, n int) float64 {
	if n == 0 || len(x) < 2 || !(p >= 0 && p <= 1) {
		return 0
	}
	var mx, sxx float64
	for _, v := range x {
		mx += v / float64(len(x))
	}
	for _, v := range x {
		sxx += (v - mx) * (v - mx)
	}
	if sxx == 0 {
		return 0
	}
	return math.Sqrt(p*(1-p)/float64(n)) * (slices.Max(x) - slices.Min(x)) / math.Sqrt(sxx)
}

// The thresholds of a falling curve (falling): a collapse is a last evaluation at least
// collapseDrop under the run's best; a falling tail has a trend below −fallSpreads × the
// tail's spread and a fall larger than the test set's sampling explains: at least fallMin,
// and more than fallNoise × the trend's sampling error (trendNoise). Without the floor a
// tail that drifts by a few tenths of a point in a straight line would count (four evenly
// spaced evaluations on a line have a trend of −2.7 × their spread, whatever its size),
// while on 2,000 test images at 94 % the trend over four evaluations every 5 rounds has a
// sampling error of 0.7 points from the test set alone.
const (
	collapseDrop = 0.10
	fallSpreads  = 2.0
	fallMin      = 0.01
	fallNoise    = 2.0
)

// falling is why s's curve counts as falling, or "" when it does not; noise is the tail
// trend's sampling error (trendNoise; 0 when unknown).
func falling(s Summary, noise float64) string {
	if s.Best-s.FinalMicro >= collapseDrop {
		return fmt.Sprintf("last evaluation %.2f, %.2f points under its best (%.2f after round %d)",
			100*s.FinalMicro, 100*(s.Best-s.FinalMicro), 100*s.Best, s.BestRound)
	}
	floor := math.Max(fallMin, fallNoise*noise)
	if s.TailEvals >= 2 && s.TailTrend < -fallSpreads*s.TailStd && s.TailTrend <= -floor {
		return fmt.Sprintf("trend %+.2f over the last evaluations, below −%g × their spread (%.2f)",
			100*s.TailTrend, fallSpreads, 100*s.TailStd)
	}
	return ""
}

// trend is the rise of the least-squares line through (x_i, y_i) across x's span:
// slope × (max x − min x); 0 for fewer than two distinct x.
func trend(x, y []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var mx, my float64
	for i := range x {
		mx += x[i] / float64(len(x))
		my += y[i] / float64(len(x))
	}
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx * (slices.Max(x) - slices.Min(x))
}
