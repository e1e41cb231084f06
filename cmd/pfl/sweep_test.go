package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/experiment"
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

// TestSeedAndSeeds: seed and seeds set by one source are refused, the message saying how a
// later source replaces one with the other; a later source's seeds (--set, PFL_SEEDS)
// replaces the file's seed and a later seed the file's seeds; null does not unset seed.
func TestSeedAndSeeds(t *testing.T) {
	// seed: 1 is the default, so only the loader can tell that it was written
	_, err := loadConfig(writeConfig(t, "seed: 1\nseeds: [1, 2]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "seed and seeds are both set") || !strings.Contains(err.Error(), "--set seeds=[1,2] over a file's seed") {
		t.Fatalf("%v; want both keys named, and how to replace one", err)
	}
	if _, err = loadConfig(writeConfig(t, "name: x\n"), []string{"seed=4", "seeds=[1, 2]"}); err == nil || !strings.Contains(err.Error(), "--set: seed and seeds are both set") {
		t.Fatalf("--set seed and --set seeds: %v", err)
	}
	cfg, err := loadConfig(writeConfig(t, "seeds: [1, 2]\n"), []string{"seed=4"})
	if err != nil || cfg.Seed != 4 || cfg.Seeds != nil {
		t.Fatalf("--set seed over the file's seeds: seed %d, seeds %v, %v; want 4 and none", cfg.Seed, cfg.Seeds, err)
	}
	cfg, err = loadConfig("../../configs/demo-fmnist.yaml", []string{"seeds=[2,3]"}) // the demo sets seed: 1
	if err != nil || cfg.Seed != config.Default().Seed || !slices.Equal(cfg.Seeds, []uint64{2, 3}) {
		t.Fatalf("--set seeds over the file's seed: seed %d, seeds %v, %v", cfg.Seed, cfg.Seeds, err)
	}
	if err := experiment.CheckGrid(cfg); err != nil {
		t.Fatal(err)
	}
	cfg, err = loadConfig(writeConfig(t, "seed: 7\n"), []string{"seeds=[2,3]"})
	if err != nil || cfg.Seed != config.Default().Seed || len(cfg.Seeds) != 2 {
		t.Fatalf("--set seeds over the file's seed 7: seed %d, seeds %v, %v", cfg.Seed, cfg.Seeds, err)
	}
	if err := cfg.Resolved().Validate(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PFL_SEEDS", "[5, 6]")
	if cfg, err = loadConfig(writeConfig(t, "seed: 7\n"), nil); err != nil || !slices.Equal(cfg.Seeds, []uint64{5, 6}) || cfg.Seed != 1 {
		t.Fatalf("PFL_SEEDS over the file's seed: seed %d, seeds %v, %v", cfg.Seed, cfg.Seeds, err)
	}
	if _, err = loadConfig(writeConfig(t, "seed: 7\n"), []string{"seed=null"}); err == nil || !strings.Contains(err.Error(), "seed cannot be unset") || !strings.Contains(err.Error(), "--set seeds=[1,2]") {
		t.Fatalf("--set seed=null: %v", err)
	}
	if _, err = loadConfig(writeConfig(t, "sweep:\n  data.alpha: 0.5\n"), nil); err == nil || !strings.Contains(err.Error(), "data.alpha") {
		t.Fatalf("a sweep value that is no list: %v", err)
	}
}
