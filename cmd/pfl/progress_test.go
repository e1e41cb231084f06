package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"pfl/engine/experiment"
	"pfl/engine/fl"
)

// TestProgressSaysTimeLeft: in a log (the output is no terminal) every round's line says
// how long its run has left, evaluations included, or that none has been timed yet, and in a
// suite how long the whole suite has left, up to the last round of its last run.
func TestProgressSaysTimeLeft(t *testing.T) {
	tmp := t.TempDir()
	small := []string{"train", "-c", "../../configs/quickstart-fmnist.yaml", "--set", "data.dataset=synthetic:300", "--set", "data.clients=4",
		"--set", "train.participation=0.5", "--set", "train.rounds=3", "--set", "out=" + tmp}
	for _, c := range []struct {
		name  string
		extra []string
		want  []string // regular expressions matching lines of the output, in this order
	}{
		{"a run evaluating every round", []string{"--set", "name=r", "--set", "train.eval_every=1"}, []string{
			`^round 1/3 loss \S+ accuracy .* samples/s  about \d+s left$`,
			`^round 2/3 loss .* samples/s  about \d+s left$`,
			`^round 3/3 loss .* samples/s$`,
		}},
		{"a run evaluating after its last round", []string{"--set", "name=e", "--set", "train.eval_every=0"}, []string{
			`^round 1/3 loss \S+  \d+ samples/s  at least \d+s left \(evaluations not timed yet\)$`,
			`^round 3/3 loss \S+ accuracy .* samples/s$`,
		}},
		{"a suite", []string{"--set", "name=s", "--set", "suite=[fedavg, local]", "--set", "train.eval_every=1"}, []string{
			`^round 1/3 loss .* samples/s  about \d+s left; run 1/2, about \d+s left in all$`,
			`^round 3/3 loss .* samples/s  run 1/2, about \d+s left in all$`,
			`^round 1/3 loss .* samples/s  about \d+s left; run 2/2, about \d+s left in all$`,
			`^round 3/3 loss .* samples/s$`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := pfl(t, 0, append(append([]string{}, small...), c.extra...)...)
			inOrder(t, out, c.want)
		})
	}
}

// inOrder fails t unless each expression matches a line of text, after the line the one
// before it matched.
func inOrder(t *testing.T, text string, want []string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	at := 0
	for _, w := range want {
		re := regexp.MustCompile(w)
		for at < len(lines) && !re.MatchString(lines[at]) {
			at++
		}
		if at == len(lines) {
			t.Fatalf("no line matches %s after the ones before:\n%s", w, text)
		}
		at++
	}
}

// TestBarSaysTimeLeft: on a terminal the bar says the time left as the log does (the
// bar's own estimate, a rate of rounds, left out the evaluations), and the suite's.
func TestBarSaysTimeLeft(t *testing.T) {
	for _, c := range []struct {
		name string
		p    experiment.Progress
		want string
	}{
		{"a run", experiment.Progress{Done: 2, Total: 10, Left: 100 * time.Second}, "loss 0.5000 acc 40.00% 0 samples/s, about 1m40s left"},
		{"untimed evaluations", experiment.Progress{Done: 2, Total: 10, Left: 8 * time.Second, EvalsUntimed: true}, "at least 8s left (evaluations not timed yet)"},
		{"a suite", experiment.Progress{Done: 2, Total: 10, Left: 100 * time.Second, Run: 1, Runs: 3, AllLeft: 2 * time.Hour}, "about 1m40s left; run 1/3, about 2h0m0s left in all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var term bytes.Buffer
			b := &barObserver{w: &term, log: &term}
			b.Round(fl.RoundMetrics{TrainLoss: 0.5, Eval: &fl.EvalResult{Micro: 0.4}}, c.p)
			if !strings.Contains(term.String(), c.want) {
				t.Errorf("the bar %q lacks %q", term.String(), c.want)
			}
		})
	}
}
