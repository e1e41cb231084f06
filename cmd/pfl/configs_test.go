package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pfl/configs"
	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/experiment"
	"pfl/engine/model"
	"pfl/internal/testenv"
)

// toySets shrinks a config to a toy size that runs in seconds on a CPU while keeping what
// the config is about (its algorithms, suite members, partition, protocol and model
// family): synthetic 3×32×32 images (or a tiny text in FedTP's Shakespeare layout), five
// clients, two rounds, and a model of width 8 (a ViT or text Transformer with the config's
// depth, a ResNet with one block per stage).
func toySets(t *testing.T, cfg config.Config, out string) []string {
	sets := []string{"device=cpu", "out=" + out, "train.rounds=2", "train.participation=0.4", "train.epochs=1",
		"train.batch=16", "train.eval_every=1", "train.tail_rounds=1", "train.checkpoint_every=1", "data.clients=5",
		"data.min_size=5", "data.train_samples=0", "data.test_samples=0", "data.image_size=0", "data.channels=0",
		"data.pad_to=0", "data.stratified=false", "novel.epochs=1"}
	p, err := model.Lookup(cfg.Model.Preset)
	if err != nil {
		t.Fatal(err)
	}
	switch kind, _, _ := strings.Cut(cfg.Data.Dataset, ":"); {
	case p.IsText():
		sets = append(sets, "data.dataset=shakespeare:"+testenv.WriteShakespeare(t, 5), "data.seq_len=6")
	case kind == "cifar100":
		sets = append(sets, "data.dataset=cifar100:"+toyCIFAR100(t))
	default:
		sets = append(sets, "data.dataset=synthetic:400:10:100")
	}
	if cfg.Data.Partition == "file" { // the file indexes the real data set: the toy takes a file of its own
		sets = append(sets, "data.partition_file="+toyPartitionFile(t, cfg.Data.Convention))
	}
	for _, k := range []struct{ field, set string }{{"Dim", "model.dim=8"}, {"Heads", "model.heads=2"},
		{"HeadDim", "model.head_dim=4"}, {"MLP", "model.mlp=8"}} {
		if p.Takes(k.field) { // a FocalNet takes a width but no heads
			sets = append(sets, k.set)
		}
	}
	if p.Takes("Patch") {
		sets = append(sets, "model.patch=16")
	}
	if cfg.Model.Preset == "resnet50" { // one Bottleneck per stage (a full ResNet-50 takes minutes here)
		sets = append(sets, "model.depth=1")
	}
	if cfg.Model.Prefix.Mid != nil {
		sets = append(sets, "model.prefix.mid=4")
	}
	// fedrep trains train.epochs − rep_epochs head epochs, then rep_epochs (1) body epochs:
	// it needs two
	if cfg.Algorithm.Name == "fedrep" || slices.ContainsFunc(cfg.Suite, func(m string) bool {
		return m == "fedrep" || strings.Contains(m, "algorithm.name=fedrep")
	}) {
		sets = append(sets, "train.epochs=2")
	}
	// a key the sweep sets is the sweep's (toyGrid shrinks its values); a --set of it is refused
	return slices.DeleteFunc(sets, func(s string) bool {
		key, _, _ := strings.Cut(s, "=")
		return slices.ContainsFunc(cfg.Sweep, func(a config.SweepAxis) bool { return a.Key == key })
	})
}

// memberRounds is a suite member's own train.rounds (pFedHN-T's doubled rounds), and
// memberParticipation its own train.participation (pFedHN's one client per round).
var (
	memberRounds        = regexp.MustCompile(`train\.rounds\s*=\s*\d+`)
	memberParticipation = regexp.MustCompile(`train\.participation\s*=\s*[0-9.eE+-]+`)
)

// toySuite shrinks the suite members that set their own train.rounds or
// train.participation to the toy's two rounds and 0.4 (of the toy's five clients: one
// client per round at the paper's 1/50 would select none).
func toySuite(suite []string) []string {
	out := make([]string, len(suite))
	for i, m := range suite {
		m = memberRounds.ReplaceAllString(m, "train.rounds=2")
		out[i] = memberParticipation.ReplaceAllString(m, "train.participation=0.4")
	}
	return out
}

// toyGrid shrinks a sweep to two values of its first key and the first of every other, and
// seeds to the first: the grid's layout, tables and plots run, at a few runs' cost. A swept
// train.participation takes toy rates (five clients cannot sample the papers' 5%).
func toyGrid(cfg config.Config) config.Config {
	var axes []config.SweepAxis
	for i, a := range cfg.Sweep {
		n := 1
		if i == 0 {
			n = 2
		}
		a.Values = a.Values[:min(n, len(a.Values))]
		if a.Key == "train.participation" { // five toy clients cannot sample 5%
			a.Values = []string{"0.4", "1"}[:len(a.Values)]
			cfg.Train.Participation = 0.4 // the base's value: checked, though every point sets its own
		}
		axes = append(axes, a)
	}
	cfg.Sweep = axes
	if len(cfg.Seeds) > 0 {
		cfg.Seeds = cfg.Seeds[:1]
	}
	return cfg
}

// toyPartitionFile writes a partition file for toySets' five clients of
// synthetic:400:10:100: 80 training and 20 test images each, in stored order. Under the
// fedperfix convention both lists index the pool of the 400 training images followed by
// the 100 test images, so the test lists start at 400.
func toyPartitionFile(t *testing.T, convention string) string {
	testBase := 0
	if convention == string(data.ConventionFedPerfix) {
		testBase = 400
	}
	var train, test [][]int
	for c := range 5 {
		train = append(train, nil)
		test = append(test, nil)
		for i := range 80 {
			train[c] = append(train[c], c*80+i)
		}
		for i := range 20 {
			test[c] = append(test[c], testBase+c*20+i)
		}
	}
	b, err := json.Marshal(map[string][][]int{"train": train, "test": test})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "partition.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// toyCIFAR100 writes a small CIFAR-100 in the official binary layout (a coarse and a fine
// label byte, then 3×32×32 pixels, per record): 1,000 training and 200 test images, fine
// class i mod 100 in coarse class fine/5, random pixels.
func toyCIFAR100(t *testing.T) string {
	dir := t.TempDir()
	for name, n := range map[string]int{"train.bin": 1000, "test.bin": 200} {
		b := make([]byte, 0, n*3074)
		for i := 0; i < n; i++ {
			fine := i % 100
			b = append(b, byte(fine/5), byte(fine))
			for j := 0; j < 3072; j++ {
				b = append(b, byte((i*7919+j*104729)%251))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEveryConfigRunsTwoRoundsAtToySize: every preset of configs/ decodes, validates and
// runs two rounds (every suite member, every evaluation protocol and partition it names;
// a sweep at two points of its first key, seeds at the first: toyGrid) at toy size, so a
// config cannot name a key, member or combination that fails to run.
func TestEveryConfigRunsTwoRoundsAtToySize(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Run(strings.TrimSuffix(e.Name(), ".yaml"), func(t *testing.T) {
			path := filepath.Join("../../configs", e.Name())
			cfg, err := loadConfig(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err = loadConfig(path, toySets(t, cfg, keptRuns(t, strings.TrimSuffix(e.Name(), ".yaml")))); err != nil {
				t.Fatal(err)
			}
			cfg.Suite = toySuite(cfg.Suite)
			if cfg.IsGrid() {
				// a grid resolves each point itself (a swept key's followers follow it)
				_, err = experiment.RunGrid(context.Background(), toyGrid(cfg), experiment.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			cfg = cfg.Resolved()
			if len(cfg.Suite) > 0 {
				_, err = experiment.RunSuite(context.Background(), cfg, nil)
			} else {
				_, err = experiment.Run(context.Background(), cfg, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// keptRuns is where a toy run of config name writes its runs: a temporary folder, or
// $PFL_TEST_KEEP_RUNS/name when that is set, so that scripts/same-metrics.sh can compare
// two commits' metrics run for run.
func keptRuns(t *testing.T, name string) string {
	root := os.Getenv("PFL_TEST_KEEP_RUNS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGridConfigsValidateEveryPoint: every config with a sweep or seeds makes and validates
// every run of its full grid at its own size (the toy test runs a part of it).
func TestGridConfigsValidateEveryPoint(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	grids := 0
	for _, e := range entries {
		cfg, err := loadConfig(filepath.Join("../../configs", e.Name()), []string{"out=" + t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if !cfg.IsGrid() {
			continue
		}
		grids++
		if err := experiment.CheckGrid(cfg); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
	if grids < 5 {
		t.Fatalf("%d configs with a sweep or seeds, want at least 5", grids)
	}
}

// TestEveryConfigGivesMembersOnlyKeysTheyRead: no suite member or sweep of configs/ sets an
// algorithm key that its run's algorithm does not read (pfl train refuses such a config).
func TestEveryConfigGivesMembersOnlyKeysTheyRead(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cfg, err := loadConfig(filepath.Join("../../configs", e.Name()), []string{"out=" + t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if err := config.CheckKeysRead(cfg, nil); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
}
