package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestAddingAnAlgorithm adds toyprox (toyprox_test.go: its settings, its strategy and
// one registry line) and wants pfl, unchanged otherwise, to list and document it and its
// setting (pfl algorithms, the Markdown table, pfl algorithms toyprox), default the
// setting, take it from a file's section, a variable and --set, refuse a bad value and a
// misspelt key naming them, write it to config.json, and hand it to the strategy: toyprox
// with μ = 0.25 trains the bits fedprox with algorithm.mu = 0.25 trains.
func TestAddingAnAlgorithm(t *testing.T) {
	out := t.TempDir()
	toy := []string{toyAlgorithmEnv + "=1"}
	want := func(r pflResult, code int, what string, texts ...string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("%s: exit %d, want %d:\n%s", what, r.code, code, r.output)
		}
		for _, s := range texts {
			if !strings.Contains(r.output, s) {
				t.Errorf("%s: the output lacks %q:\n%s", what, s, r.output)
			}
		}
	}
	// listed and documented
	want(runPFL(t, out, toy, "algorithms"), 0, "pfl algorithms", "toyprox", "algorithm.toyprox.*")
	want(runPFL(t, out, toy, "algorithms", "-markdown"), 0, "pfl algorithms -markdown", "| `toyprox` |", "`algorithm.toyprox.*`")
	r := runPFL(t, out, toy, "algorithms", "toyprox")
	want(r, 0, "pfl algorithms toyprox")
	if !regexp.MustCompile(`algorithm\.toyprox\.mu\s+0\.5`).MatchString(r.output) {
		t.Errorf("pfl algorithms toyprox does not give algorithm.toyprox.mu's default 0.5:\n%s", r.output)
	}

	tiny := []string{"--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=2",
		"--set", "train.participation=0.5", "--set", "suite=[]", "--set", "data.partition=iid", "--set", "model.preset=tiny-vit",
		"--set", "model.depth=1", "--set", "model.patch=8", "--set", "model.dim=16", "--set", "model.heads=2", "--set", "model.head_dim=8",
		"--set", "model.mlp=16", "--set", "train.eval_every=1", "--set", "out=" + out}
	train := func(env []string, name string, sets ...string) pflResult {
		args := append([]string{"train"}, tiny...)
		args = append(args, "--set", "name="+name)
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		return runPFL(t, out, env, args...)
	}
	// without the registry line it does not exist
	want(train(nil, "unregistered", "algorithm.name=toyprox"), 1, "toyprox unregistered", `unknown algorithm "toyprox"`)
	// defaulted, and taken from a file, a variable and --set
	want(runPFL(t, out, toy, append([]string{"train", "--set", "algorithm.name=toyprox", "--print-config"}, tiny...)...), 0, "default",
		"algorithm.toyprox.mu: 0.5")
	file := filepath.Join(out, "toy.yaml")
	if err := os.WriteFile(file, []byte("algorithm:\n  name: toyprox\n  toyprox:\n    mu: 0.75\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want(runPFL(t, out, toy, "train", "-c", file, "--print-config"), 0, "from a file", "algorithm.toyprox.mu: 0.75")
	want(runPFL(t, out, append(toy, "PFL_ALGORITHM_TOYPROX_MU=0.125"), "train", "-c", file, "--print-config"), 0, "from a variable",
		"algorithm.toyprox.mu: 0.125", "PFL_ALGORITHM_TOYPROX_MU")
	// refused, naming the key
	want(train(toy, "bad", "algorithm.name=toyprox", "algorithm.toyprox.mu=-1"), 1, "μ = −1", "algorithm.toyprox.mu")
	want(train(toy, "bad", "algorithm.name=toyprox", "algorithm.toyprox.nu=1"), 1, "a misspelt key", "algorithm.toyprox.nu")
	if err := os.WriteFile(file, []byte("algorithm:\n  name: toyprox\n  toyprox:\n    nu: 0.75\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want(runPFL(t, out, toy, "train", "-c", file, "--print-config"), 1, "a misspelt key in a file", "algorithm.toyprox", "nu")

	// written to config.json and handed to the strategy
	want(train(toy, "toy", "algorithm.name=toyprox", "algorithm.toyprox.mu=0.25"), 0, "toyprox trains")
	want(train(nil, "prox", "algorithm.name=fedprox", "algorithm.mu=0.25"), 0, "fedprox trains")
	b, err := os.ReadFile(filepath.Join(out, "toy", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Algorithm map[string]any `json:"algorithm"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || !reflect.DeepEqual(cfg.Algorithm["toyprox"], map[string]any{"mu": 0.25}) {
		t.Errorf("config.json's algorithm.toyprox is %v (%v), want {mu: 0.25}", cfg.Algorithm["toyprox"], err)
	}
	if toyM, proxM := metricsWithoutTimes(t, filepath.Join(out, "toy")), metricsWithoutTimes(t, filepath.Join(out, "prox")); toyM != proxM {
		t.Errorf("toyprox with μ 0.25 and fedprox with μ 0.25 differ:\n%s\n%s", toyM, proxM)
	}
}

// metricsWithoutTimes is a run's metrics.jsonl without its wall-time fields.
func metricsWithoutTimes(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`,?"time_[a-z_]+":[0-9.e+-]+`).ReplaceAllString(string(b), "")
}
