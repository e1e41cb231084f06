package main

import (
	"slices"
	"strings"
	"testing"

	"pfl/engine/experiment"
)

func TestSetTakesLists(t *testing.T) {
	cfg, err := loadConfig("../../configs/fedtp-shakespeare.yaml", []string{"suite=[fedavg, fedprox,fedper]", "model.preset=lstm", "model.depth=null", "train.rounds=7"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Suite, []string{"fedavg", "fedprox", "fedper"}) || cfg.Model.Preset != "lstm" || cfg.Train.Rounds != 7 {
		t.Fatalf("suite %q, preset %q, rounds %d", cfg.Suite, cfg.Model.Preset, cfg.Train.Rounds)
	}
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSuiteFromTheCommandLineKeepsMembersSettings: a member the command line names keeps
// the settings the file gave it (the demo's transfed its FocalNet; it used to run as a
// plain transfed on the demo's ViT, which needs a FocalNet), and a new name is a plain
// algorithm.
func TestSuiteFromTheCommandLineKeepsMembersSettings(t *testing.T) {
	file, err := loadConfig("", nil) // the embedded demo
	if err != nil {
		t.Fatal(err)
	}
	var transfed string
	for _, m := range file.Suite {
		if strings.HasPrefix(m, "transfed:") {
			transfed = m
		}
	}
	if !strings.Contains(transfed, "model.preset=focalnet-cifar") {
		t.Fatalf("the demo's suite %q has no transfed member with a FocalNet", file.Suite)
	}
	for _, sets := range [][]string{{"suite=[transfed, fedavg, fedprox]"}, {"suite=[transfed,fedavg,fedprox]", "train.rounds=3"}} {
		cfg, err := loadConfig("", sets)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{transfed, "fedavg", "fedprox"}; !slices.Equal(cfg.Suite, want) {
			t.Fatalf("--set %q: suite %q, want %q", sets, cfg.Suite, want)
		}
		cfg.Seeds = []uint64{1} // CheckGrid builds and validates every member
		if err := experiment.CheckGrid(cfg); err != nil {
			t.Fatalf("--set %q: %v", sets, err)
		}
	}
	t.Setenv("PFL_SUITE", "[transfed]")
	if cfg, err := loadConfig("", nil); err != nil || !slices.Equal(cfg.Suite, []string{transfed}) {
		t.Fatalf("PFL_SUITE=[transfed]: suite %q, %v", cfg.Suite, err)
	}
}
