package rundir

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
)

// TestTailTrend checks Summary.TailTrend, the rise of the least-squares line through the
// tail window's evaluations: exact on a line, 0 on a flat tail whatever came before it, and
// 0 with one evaluation. The sums are of a few O(1) numbers, so float64 rounding is below
// 1e-12.
func TestTailTrend(t *testing.T) {
	for _, c := range []struct {
		name  string
		micro func(round int) float64 // accuracy evaluated after round (from 1)
		every int                     // evaluation interval
		tail  int                     // train.tail_rounds
		want  float64
	}{
		// 20 rounds, evaluations after 5, 10, 15, 20; the window is rounds ≥ 10: 10, 15, 20
		{"line", func(r int) float64 { return 0.5 + 0.01*float64(r) }, 5, 10, 0.10},
		{"flat after a rise", func(r int) float64 { return math.Min(0.1*float64(r), 0.8) }, 5, 10, 0},
		{"falling", func(r int) float64 { return 0.9 - 0.002*float64(r) }, 5, 10, -0.02},
		// evaluations after every round: the window is rounds 18 to 20
		{"zig-zag", func(r int) float64 { return 0.8 + 0.1*float64(r%2) }, 1, 2, 0},
		{"one evaluation", func(r int) float64 { return float64(r) }, 20, 5, 0},
	} {
		var h []fl.RoundMetrics
		for r := 0; r < 20; r++ {
			m := fl.RoundMetrics{Round: r, Clients: []int{0}}
			if (r+1)%c.every == 0 {
				a := c.micro(r + 1)
				m.Eval = &fl.EvalResult{Accuracy: []float64{a}, Micro: a, Mean: a}
			}
			h = append(h, m)
		}
		s := Summarize(c.name, h, c.tail, nil)
		if math.Abs(s.TailTrend-c.want) > 1e-12 {
			t.Errorf("%s: trend %v over %d evaluations, want %v", c.name, s.TailTrend, s.TailEvals, c.want)
		}
	}
}

// TestFallingCurves checks Summary.Falling on crafted histories: a collapse (the last
// evaluation 10 points under the best) and a tail falling by more than twice its spread
// are flagged; a flat noisy tail, a rising one, a drift of half a point in a straight line
// and a drop of 9 points (under the collapse threshold, with a tail too noisy to call) are
// not.
func TestFallingCurves(t *testing.T) {
	for _, c := range []struct {
		name  string
		evals []float64 // evaluations after rounds 5, 10, …; the tail is the last four
		want  string    // a word of the reason, or "" for none
	}{
		{"collapse", []float64{0.5, 0.874, 0.82, 0.74, 0.76, 0.62, 0.545}, "under its best"},
		{"falling tail", []float64{0.5, 0.9, 0.9, 0.9, 0.88, 0.86, 0.84}, "trend"},
		{"flat and noisy", []float64{0.5, 0.9, 0.91, 0.89, 0.91, 0.89, 0.905}, ""},
		{"rising", []float64{0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85}, ""},
		{"a straight drift of half a point", []float64{0.5, 0.9, 0.9, 0.9, 0.9, 0.8983, 0.8967, 0.895}, ""},
		{"a noisy drop of 9 points", []float64{0.5, 0.9, 0.9, 0.9, 0.81, 0.9, 0.81}, ""},
	} {
		var h []fl.RoundMetrics
		for i, a := range c.evals {
			for r := 5 * i; r < 5*i+5; r++ {
				m := fl.RoundMetrics{Round: r, Clients: []int{0}}
				if r == 5*i+4 {
					m.Eval = &fl.EvalResult{Accuracy: []float64{a}, Micro: a, Mean: a}
				}
				h = append(h, m)
			}
		}
		s := Summarize(c.name, h, 16, nil)
		if (c.want == "") != (s.Falling == "") || !strings.Contains(s.Falling, c.want) {
			t.Errorf("%s: falling %q (trend %.4f, spread %.4f, best %.3f after round %d, last %.3f); want a reason with %q",
				c.name, s.Falling, s.TailTrend, s.TailStd, s.Best, s.BestRound, s.FinalMicro, c.want)
		}
	}
}

// TestNonFiniteValuesSurviveEveryFile: a diverged run's NaN and infinite values survive
// its checkpoint's history, its metrics line and its summary (report's degenerate-series
// test draws them).
func TestNonFiniteValuesSurviveEveryFile(t *testing.T) {
	h := []fl.RoundMetrics{{Round: 0, Clients: []int{1}, TrainLoss: math.NaN(), Samples: 3,
		Eval: &fl.EvalResult{Correct: []int{0, 0}, Count: []int{0, 2}, Accuracy: []float64{math.NaN(), 0},
			Loss: []float64{math.Inf(1), math.Inf(-1)}, Micro: 0, Mean: math.NaN(), Std: math.NaN()}}}
	b, err := json.Marshal(historyRecords(h))
	if err != nil {
		t.Fatal(err)
	}
	var back []historyRecord
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back[0].check(0, 2); err != nil {
		t.Fatal(err)
	}
	m := back[0].metrics()
	if !math.IsNaN(m.TrainLoss) || !math.IsInf(m.Eval.Loss[0], 1) || !math.IsNaN(m.Eval.Mean) {
		t.Fatalf("history came back as %+v %+v", m, m.Eval)
	}
	if _, err := json.Marshal(RoundLine(h[0])); err != nil {
		t.Fatalf("metrics line: %v", err)
	}
	s := Summarize("x", h, 200, nil)
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("summary: %v", err)
	}
}

// TestSummaryJSON: summary.json holds every key of Summary in its order, a non-finite
// value as a string ("NaN", "+Inf", "-Inf"), and reads back to the same summary (the
// expected bytes are those summary.json has always held).
func TestSummaryJSON(t *testing.T) {
	s := Summary{Name: "a", Algorithm: "fedtp", Seed: 7, Member: "m", Sweep: []config.SweepValue{{Key: "data.alpha", Value: "0.1"}}, Rounds: 3,
		FinalMicro: 0.5, FinalMean: math.NaN(), FinalStd: 0.25, P10: 0.1, P50: 0.2, P90: math.Inf(1), Worst10: 0.05,
		TailMean: 0.4, TailStd: 0.01, TailEvals: 2, TailTrend: -0.125, Best: 0.6, BestRound: 2, Falling: "f", ClientUpdates: 9,
		SamplesPerSec: 123.5, WallSeconds: 1.5, Diverged: 4,
		Novel:        []NovelSummary{{Tuned: "embedding", Micro: []float64{0.1, math.Inf(-1)}, Mean: []float64{0.3}}},
		EvalProtocol: "fedtp", Resources: fl.Resources{StoredParams: 10, PersonalParams: 2, UpParams: 3, DownParams: 4, TrainFLOPs: 1.5e6}}
	for _, c := range []struct {
		s    Summary
		want string
	}{
		{s, `{"name":"a","algorithm":"fedtp","seed":7,"member":"m","sweep":[{"key":"data.alpha","value":"0.1"}],"rounds":3,"final_micro":0.5,"final_mean":"NaN","final_std":0.25,"p10":0.1,"p50":0.2,"p90":"+Inf","worst10":0.05,"tail_mean":0.4,"tail_std":0.01,"tail_evals":2,"tail_trend":-0.125,"best_micro":0.6,"best_round":2,"falling":"f","client_updates":9,"samples_per_sec":123.5,"wall_seconds":1.5,"diverged_at_round":4,"novel":[{"tuned":"embedding","micro":[0.1,"-Inf"],"mean":[0.3],"std":null}],"eval_protocol":"fedtp","resources":{"stored_params":10,"personal_params":2,"up_params":3,"down_params":4,"forward_macs":0,"train_flops":1500000}}`},
		{Summary{}, `{"name":"","seed":0,"rounds":0,"final_micro":0,"final_mean":0,"final_std":0,"p10":0,"p50":0,"p90":0,"worst10":0,"tail_mean":0,"tail_std":0,"tail_evals":0,"tail_trend":0,"best_micro":0,"best_round":0,"client_updates":0,"samples_per_sec":0,"wall_seconds":0,"eval_protocol":"","resources":{"stored_params":0,"personal_params":0,"up_params":0,"down_params":0,"forward_macs":0,"train_flops":0}}`},
	} {
		b, err := json.Marshal(c.s)
		if err != nil || string(b) != c.want {
			t.Fatalf("summary.json\n%s (%v)\nwant\n%s", b, err, c.want)
		}
		var back Summary
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); string(again) != c.want {
			t.Errorf("read back and written again:\n%s\nwant\n%s", again, c.want)
		}
	}
}

// TestFallingNeedsMoreThanSamplingNoise: the same tail (94.8, 94.7, 93.9, 93.7 after rounds
// 65 to 80: a trend of −1.26 against a spread of 0.47) is within what 2,000 test
// predictions' sampling explains (the trend's sampling error there is
// √(0.943·0.057/2000)·15/√125 = 0.70 points, so the floor is 1.39), and a fall when the
// evaluations count 200,000 predictions (floor 1 point, the minimum).
func TestFallingNeedsMoreThanSamplingNoise(t *testing.T) {
	evals := map[int]float64{5: 0.3, 60: 0.945, 65: 0.948, 70: 0.947, 75: 0.939, 80: 0.937}
	for _, c := range []struct {
		count int
		want  bool
	}{{2000, false}, {200000, true}} {
		var h []fl.RoundMetrics
		for r := 0; r < 80; r++ {
			m := fl.RoundMetrics{Round: r, Clients: []int{0}}
			if a, ok := evals[r+1]; ok {
				m.Eval = &fl.EvalResult{Accuracy: []float64{a}, Micro: a, Mean: a, Count: []int{c.count}}
			}
			h = append(h, m)
		}
		s := Summarize("x", h, 16, nil)
		if (s.Falling != "") != c.want {
			t.Errorf("%d predictions: falling %q (trend %.4f, spread %.4f); want falling %v", c.count, s.Falling, s.TailTrend, s.TailStd, c.want)
		}
	}
}
