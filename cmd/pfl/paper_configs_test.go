package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/configs"
	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/model"
)

// TestTransFedConfigsCompareLikeWithLike: TransFed's paper compares two ways of tailoring
// the same layers, keeping them local (Vanilla customized-T, §3.2) or generating them with
// the hypernetwork (§3.3; Table 2, §4.2.4; Table 3's "Focal Modulation" row). In every
// preset of configs/, a member that runs TransFed as the paper names it (algorithm
// transfed, algorithm.generate unset) generates exactly the parameters vanilla-c-t keeps
// local, and every vanilla member (vanilla-c-t, or partial keeping focal-modulation roles
// only) has a TransFed member in the same config that generates exactly what it keeps
// local.
func TestTransFedConfigsCompareLikeWithLike(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	focalRoles := []model.Role{model.RoleFocalF, model.RoleFocalCtx, model.RoleFocalH, model.RoleFocalProj}
	models := map[string]model.Model{}
	defer func() {
		for _, m := range models {
			m.Close()
		}
	}()
	params := func(preset string, pick func(*model.Param) bool) []string {
		m := models[preset]
		if m == nil {
			if m, err = model.Build(model.Spec{Preset: preset}, 1, cuda.CPU, cuda.Float32, nil); err != nil {
				t.Fatal(err)
			}
			models[preset] = m
		}
		var out []string
		for _, p := range m.Params().List {
			if pick(p) {
				out = append(out, p.Name)
			}
		}
		return out
	}
	vanillaCT := params("focalnet-cifar", algo.VanillaCustomizedT().Personal)
	if len(vanillaCT) == 0 {
		t.Fatal("vanilla-c-t keeps nothing local on focalnet-cifar")
	}
	paperMembers, pairs := 0, 0
	for _, e := range entries {
		generated, local := map[string][]string{}, map[string][]string{}
		for label, cfg := range configMembers(t, e.Name()) {
			p, err := model.Lookup(cfg.Model.Preset)
			if err != nil || !p.IsFocalNet() {
				continue
			}
			a := cfg.Resolved().Algorithm
			strat := a.Strategy()
			switch a.Name {
			case "transfed":
				g := params(cfg.Model.Preset, strat.(fl.GenerateStage).GenerateHooks().Generated)
				generated[label] = g
				if a.Generate == nil {
					paperMembers++
					if !slices.Equal(g, params(cfg.Model.Preset, algo.VanillaCustomizedT().Personal)) {
						t.Errorf("%s, member %s: transfed generates %v, vanilla-c-t keeps %v local", e.Name(), label, g, vanillaCT)
					}
				}
			case "vanilla-c-t", "partial":
				kept := params(cfg.Model.Preset, strat.Personal)
				focalOnly := len(kept) > 0 && len(params(cfg.Model.Preset, func(q *model.Param) bool {
					return strat.Personal(q) && !slices.Contains(focalRoles, q.Role)
				})) == 0
				if focalOnly {
					local[label] = kept
				}
			}
		}
		for label, kept := range local {
			var match []string
			for g, set := range generated {
				if slices.Equal(set, kept) {
					match = append(match, g)
				}
			}
			if len(match) == 0 {
				t.Errorf("%s: vanilla member %s keeps %v local, but no transfed member generates exactly that (transfed members: %v)", e.Name(), label, kept, generated)
				continue
			}
			pairs++
		}
	}
	// transfed-t2-rsna, -kermany, -t3-parts, -t4-novel, -f3-participation, the demo and
	// transfed-generated-fmnist name the paper's TransFed; the t2 and t4 tables and
	// transfed-generated-fmnist (twice) pair it with a vanilla member
	t.Logf("%d members run the paper's TransFed, %d vanilla members paired", paperMembers, pairs)
	if paperMembers < 7 || pairs < 5 {
		t.Fatalf("%d members run the paper's TransFed and %d vanilla members are paired; want at least 7 and 5", paperMembers, pairs)
	}
}

// configMembers loads every member of the preset config file (the config itself when it
// has no suite), each with its own keys applied: label → config.
func configMembers(t *testing.T, file string) map[string]config.Config {
	t.Helper()
	path := filepath.Join("../../configs", file)
	out := "out=" + t.TempDir()
	base, err := loadConfig(path, []string{out})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(base.Suite) == 0 {
		return map[string]config.Config{base.Algorithm.Name: base}
	}
	// each member as the suite runs it; seeds and a sweep point do not change which
	// algorithm or schedule a member runs
	base.Seeds, base.Sweep = nil, nil
	list, err := config.Members(base)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	members := map[string]config.Config{}
	for _, m := range list {
		members[m.Name] = m
	}
	return members
}

// TestFedTPConfigsTrainPFedHNFor5000Rounds: FedTP §IV-A.4 trains every algorithm for 1,500
// rounds and pFedHN for 5,000 ("to make for an equivalent communication cost"); every
// pFedHN run of a FedTP config (fedtp-*.yaml) trains 5,000 rounds.
func TestFedTPConfigsTrainPFedHNFor5000Rounds(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "fedtp-") {
			continue
		}
		for label, cfg := range configMembers(t, e.Name()) {
			if cfg.Algorithm.Name != "pfedhn" {
				continue
			}
			runs++
			if cfg.Train.Rounds != 5000 {
				t.Errorf("%s, member %s: pfedhn trains %d rounds, want FedTP's 5,000", e.Name(), label, cfg.Train.Rounds)
			}
		}
	}
	if runs < 4 { // fedtp-t2-pfedhn-t, fedtp-t3-pfedhn, fedtp-t3-suite, fedtp-novel-c100
		t.Fatalf("%d pfedhn runs in the FedTP configs, want at least 4", runs)
	}
}

// TestTransFedConfigsTrainFiveLocalEpochs: TransFed's paper states no local epoch count;
// its setup (§4.1.3) follows FedTP's §IV-A.4 nearly word for word, which trains 5 local
// epochs (FedTP's code's default too), so every run of TransFed's paper configs
// (transfed-t*.yaml, transfed-f*.yaml) trains 5.
func TestTransFedConfigsTrainFiveLocalEpochs(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "transfed-t") && !strings.HasPrefix(e.Name(), "transfed-f") {
			continue
		}
		files++
		for label, cfg := range configMembers(t, e.Name()) {
			if cfg.Train.Epochs != 5 {
				t.Errorf("%s, member %s: %d local epochs, want 5", e.Name(), label, cfg.Train.Epochs)
			}
		}
	}
	if files < 5 { // t2-rsna, t2-kermany, t3-parts, t4-novel, f3-participation
		t.Fatalf("%d TransFed paper configs, want at least 5", files)
	}
}
