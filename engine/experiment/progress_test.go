package experiment

import (
	"regexp"
	"testing"
	"time"

	"pfl/engine/config"
	"pfl/engine/fl"
)

// TestRunCounterAnnouncesEachRun: the first run is "run 1/N"; later ones add the elapsed
// time, and the time left once a run has been timed (none while every run so far was
// skipped as finished before).
func TestRunCounterAnnouncesEachRun(t *testing.T) {
	c := newRunCounter(3)
	steps := []struct {
		name    string
		trained bool
		want    string
	}{
		{"fedtp", true, `^== run 1/3 fedtp$`},
		{"fedavg", false, `^== run 2/3 fedavg \(\d+s elapsed, about \d+s left\)$`},
		{"local", false, `^== run 3/3 local \(\d+s elapsed, about \d+s left\)$`},
	}
	for _, s := range steps {
		if line := c.next(s.name); !regexp.MustCompile(s.want).MatchString(line) {
			t.Errorf("%q, want %s", line, s.want)
		}
		if s.trained {
			c.trained()
		}
	}
	skipped := newRunCounter(2)
	skipped.next("a")
	if line := skipped.next("b"); !regexp.MustCompile(`^== run 2/2 b \(\d+s elapsed\)$`).MatchString(line) {
		t.Errorf("after a skipped run: %q, want no estimate", line)
	}
}

// TestPaceCountsEvaluations: the time a run has left counts its evaluations at their own
// cost (a round that evaluates takes longer, and with train.eval_every 5 four rounds of five
// do not): none is known before the first, and the estimate says it is a lower bound; in a
// suite or grid the runs not yet started add the mean projected cost of a run.
func TestPaceCountsEvaluations(t *testing.T) {
	const s = time.Second
	start := time.Unix(0, 0)
	p := newPace(config.Train{Rounds: 10, EvalEvery: 5}, start)
	c := newRunCounter(3)
	c.next("a")
	var got Progress
	obs := c.observe(recorder{&got})
	now := start
	for _, r := range []struct {
		done     int
		wall     time.Duration // the round's, its evaluation included
		eval     time.Duration // 0: the round does not evaluate
		left     time.Duration
		untimed  bool
		allLeft  time.Duration
		timeLeft string
	}{
		// 9 rounds of 1 s; the evaluations after rounds 5 and 10 not timed yet
		{1, 1 * s, 0, 9 * s, true, 9*s + 2*10*s, "at least 9s left (evaluations not timed yet); run 1/3, at least 29s left in all"},
		{4, 1 * s, 0, 6 * s, true, 6*s + 2*10*s, ""},
		// an evaluation of 3 s: 5 rounds of 1 s and one evaluation left; a run costs 10 + 2 × 3 s
		{5, 4 * s, 3 * s, 8 * s, false, 8*s + 2*16*s, "about 8s left; run 1/3, about 40s left in all"},
		{10, 4 * s, 3 * s, 0, false, 2 * 16 * s, "run 1/3, about 32s left in all"},
	} {
		for d := got.Done + 1; d < r.done; d++ { // the rounds between, 1 s each and no evaluation
			now = now.Add(s)
			obs.Round(fl.RoundMetrics{}, p.round(fl.RoundMetrics{}, d, now, 0))
		}
		now = now.Add(r.wall)
		m := fl.RoundMetrics{}
		if r.eval > 0 {
			m.Eval, m.Time.Eval = &fl.EvalResult{}, r.eval
		}
		obs.Round(m, p.round(m, r.done, now, 0))
		if got.Left != r.left || got.EvalsUntimed != r.untimed || got.AllLeft != r.allLeft {
			t.Errorf("after round %d: left %v (untimed %v), all %v; want %v (%v), %v", r.done, got.Left, got.EvalsUntimed, got.AllLeft, r.left, r.untimed, r.allLeft)
		}
		if r.timeLeft != "" && got.TimeLeft() != r.timeLeft {
			t.Errorf("after round %d: %q, want %q", r.done, got.TimeLeft(), r.timeLeft)
		}
	}
	// the next run: the first one's projected 16 s counts for the runs after it
	c.trained()
	c.next("b")
	q := newPace(config.Train{Rounds: 10, EvalEvery: 5}, now)
	obs.Round(fl.RoundMetrics{}, q.round(fl.RoundMetrics{}, 1, now.Add(2*s), 0))
	if want := 18*s + (16*s+20*s)/2; got.AllLeft != want || got.Run != 2 {
		t.Errorf("run 2 after its first round of 2 s: all %v (run %d); want %v (run 2)", got.AllLeft, got.Run, want)
	}
}

// recorder is an Observer keeping the last progress it was given.
type recorder struct{ p *Progress }

func (r recorder) Round(_ fl.RoundMetrics, p Progress) { *r.p = p }
func (recorder) Log(string)                            {}
