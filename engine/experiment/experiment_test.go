package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunWritesTheRunDirectory(t *testing.T) {
	cfg := Config{Name: "tiny", Out: t.TempDir(),
		Data:      DataConfig{Dataset: "synthetic:600", Clients: 6, Partition: "dirichlet", Alpha: 1},
		Algorithm: AlgorithmConfig{Name: "fedper"},
		Train:     TrainConfig{Rounds: 3, Participation: 0.5, Batch: 32, LR: 0.05, EvalEvery: 1}}
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "partition.json", "partition.png", "metrics.jsonl", "summary.json",
		"accuracy.png", "accuracy.svg", "loss.png", "loss.svg", "clients.png", "clients.svg"} {
		if st, err := os.Stat(filepath.Join(res.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(res.Dir, "metrics.jsonl"))
	if lines := strings.Count(string(b), "\n"); lines != 3 {
		t.Errorf("metrics.jsonl has %d lines, want one per round", lines)
	}
	var s Summary
	b, _ = os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err := json.Unmarshal(b, &s); err != nil || s.Rounds != 3 || s.TailEvals != 3 || !(s.FinalMicro > 0.1) {
		t.Fatalf("summary %+v, %v", s, err)
	}
	// evaluating the saved checkpoint reproduces the last round's evaluation
	ev, rounds, err := Evaluate(res.Dir)
	if err != nil || rounds != 3 || ev.Micro != s.FinalMicro {
		t.Fatalf("eval of the checkpoint: %v after %d rounds (%v), want %v", ev.Micro, rounds, err, s.FinalMicro)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	for _, c := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Algorithm.Name = "fedsgd" }, "algorithm.name"},
		{func(c *Config) { c.Model.Preset = "resnet" }, "model.preset"},
		{func(c *Config) { c.Device = "tpu" }, "device"},
		{func(c *Config) { c.Train.Participation = 0.01; c.Data.Clients = 10 }, "selects no client"},
		{func(c *Config) { c.Train.Participation = 2 }, "participation"},
		{func(c *Config) { c.Train.Momentum = 1 }, "momentum"},
	} {
		var cfg Config
		cfg.Defaults()
		c.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}
