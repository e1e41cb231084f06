package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/rundir"
)

// plotRun writes a finished-looking run of algorithm algo at dir: its config.json and a
// metrics.jsonl of three evaluated rounds.
func plotRun(t *testing.T, dir, algo string, seed uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Resolved()
	cfg.Name, cfg.Algorithm.Name, cfg.Seed, cfg.Data.Dataset = filepath.Base(dir), algo, seed, "synthetic:300"
	if err := rundir.WriteJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	var m strings.Builder
	for r := 0; r < 3; r++ {
		fmt.Fprintf(&m, `{"round":%d,"clients":[0],"train_loss":1,"samples":4,"accuracy":%g}`+"\n", r, 0.2+0.1*float64(r))
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(m.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlotLabels: -label names each run argument's curve; without it, two runs whose
// folders share a name (seed-1) are told apart by their algorithm; a -label count that
// does not match the arguments is refused.
func TestPlotLabels(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "run-a", "seed-1"), filepath.Join(tmp, "run-b", "seed-1")
	plotRun(t, a, "fedtp", 1)
	plotRun(t, b, "fedavg", 1)
	svg := filepath.Join(tmp, "f.svg")
	for _, c := range []struct {
		args       []string
		want, lack []string
	}{
		{[]string{"plot", "-label", "FedTP, α 0.1", "-label", "FedAvg baseline", "-out", svg, a, b}, []string{"FedTP, α 0.1", "FedAvg baseline"}, []string{"seed-1"}},
		{[]string{"plot", "-out", svg, a, b}, []string{"fedtp · synthetic:300 · seed 1", "fedavg · synthetic:300 · seed 1"}, []string{"seed-1<"}},
	} {
		pfl(t, 0, c.args...)
		text, err := os.ReadFile(svg)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(text), w) {
				t.Errorf("pfl %q: the figure does not name %q", c.args, w)
			}
		}
		for _, l := range c.lack {
			if strings.Contains(string(text), l) {
				t.Errorf("pfl %q: the figure names %q", c.args, l)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"plot", "-label", "one", "-out", svg, a, b}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "one -label per run") {
		t.Errorf("one -label for two runs: exit %d, %q", code, errOut.String())
	}
}
