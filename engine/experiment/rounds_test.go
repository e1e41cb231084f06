package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/rundir"
)

// TestRoundsCountFromOne: the console and metrics.jsonl number a run's rounds alike, from
// 1 (the plots and TensorBoard's steps read them so); a metrics.jsonl an earlier pfl wrote
// from 0 is read renumbered from 1, and one numbered otherwise is refused.
func TestRoundsCountFromOne(t *testing.T) {
	cfg := filled(config.Config{Name: "rounds", Out: t.TempDir(),
		Data:      config.Data{Dataset: "synthetic:300", Clients: 4, Partition: "iid"},
		Algorithm: fl.Settings{Name: "fedavg"},
		Train:     config.Train{Rounds: 3, Participation: 0.5, Batch: 32, LR: 0.05, EvalEvery: 1}})
	var console bytes.Buffer
	res, err := Run(context.Background(), cfg, Lines{W: &console})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rounds []int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Round int `json:"round"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		rounds = append(rounds, m.Round)
	}
	if fmt.Sprint(rounds) != "[1 2 3]" {
		t.Errorf("metrics.jsonl numbers the rounds %v, want [1 2 3]", rounds)
	}
	for r := 1; r <= 3; r++ {
		if !strings.Contains(console.String(), fmt.Sprintf("round %d/3 ", r)) {
			t.Errorf("the console lacks round %d/3:\n%s", r, console.String())
		}
	}
	for _, c := range []struct {
		file string
		ok   bool
	}{
		{`{"round":0}` + "\n" + `{"round":1}`, true}, // an earlier pfl's
		{`{"round":1}` + "\n" + `{"round":2}`, true},
		{`{"round":1}` + "\n" + `{"round":1}`, false},
		{`{"round":2}` + "\n" + `{"round":3}`, false},
	} {
		lines, err := rundir.ParseMetrics([]byte(c.file))
		switch {
		case c.ok && (err != nil || len(lines) != 2 || lines[0].Round != 1 || lines[1].Round != 2):
			t.Errorf("%q: %+v, %v; want rounds 1 and 2", c.file, lines, err)
		case !c.ok && err == nil:
			t.Errorf("%q: read, want an error", c.file)
		}
	}
}
