package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSweepBlockKeepsItsOrderAndValues(t *testing.T) {
	cfg, err := loadConfig(writeConfig(t, `
seeds: [3, 1]
sweep:
  train.participation: [0.1, 0.25]
  algorithm.local_roles: [[mlp, head], [head]]
  data:
    alpha: [0.1, 0.5]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "train.participation=[0.1 0.25] algorithm.local_roles=[[mlp, head] [head]] data.alpha=[0.1 0.5]"
	var got []string
	for _, a := range cfg.Sweep {
		got = append(got, a.Key+"=["+strings.Join(a.Values, " ")+"]")
	}
	if strings.Join(got, " ") != want || len(cfg.Seeds) != 2 || cfg.Seeds[0] != 3 {
		t.Fatalf("sweep %s, seeds %v; want %s and [3 1]", strings.Join(got, " "), cfg.Seeds, want)
	}
}

func TestSeedAndSeedsTogetherAreRefused(t *testing.T) {
	// seed: 1 is the default, so only the loader can tell that it was written
	_, err := loadConfig(writeConfig(t, "seed: 1\nseeds: [1, 2]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "seed and seeds are both set") {
		t.Fatalf("%v; want both keys named", err)
	}
	if _, err = loadConfig(writeConfig(t, "seeds: [1, 2]\n"), []string{"seed=4"}); err == nil || !strings.Contains(err.Error(), "seed and seeds") {
		t.Fatalf("--set seed with seeds: %v", err)
	}
	if _, err = loadConfig(writeConfig(t, "sweep:\n  data.alpha: 0.5\n"), nil); err == nil || !strings.Contains(err.Error(), "data.alpha") {
		t.Fatalf("a sweep value that is no list: %v", err)
	}
}
