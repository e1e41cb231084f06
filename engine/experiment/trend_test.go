package experiment

import (
	"math"
	"strings"
	"testing"

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
		s := summarize(c.name, h, c.tail, nil)
		if math.Abs(s.TailTrend-c.want) > 1e-12 {
			t.Errorf("%s: trend %v over %d evaluations, want %v", c.name, s.TailTrend, s.TailEvals, c.want)
		}
	}
}

// TestTableShowsTrendAndNote checks that the suite's table has the trend column, says how
// to read it, and prints the config's note under the table, before the resources.
func TestTableShowsTrendAndNote(t *testing.T) {
	r := &Result{Summary: Summary{Name: "fedavg", TailEvals: 3, TailTrend: 0.0123}}
	got := table([]*Result{r}, "At this size no member beats Local.")
	for _, want := range []string{"| trend over last evals |", "| +1.23 |", "Trend: the rise of the least-squares line", "\nAt this size no member beats Local.\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "At this size") > strings.Index(got, "Resources per client") {
		t.Errorf("the note is not under the results table:\n%s", got)
	}
	if one := table([]*Result{{Summary: Summary{Name: "x", TailEvals: 1}}}, ""); !strings.Contains(one, "| n/a |") {
		t.Errorf("one evaluation's trend is not n/a:\n%s", one)
	}
}
