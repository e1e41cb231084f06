package main

import (
	"slices"
	"testing"
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
