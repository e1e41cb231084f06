package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
)

// TestLoadFileReadsYAMLAsPflTrainDoes: a program loads a YAML config with LoadFile alone,
// the file over the defaults, then the PFL_* variables, then the --set overrides, each key
// recorded with its source; the device is parsed where the config is read.
func TestLoadFileReadsYAMLAsPflTrainDoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.yaml")
	yaml := "name: x\ndevice: cuda:1\nTrain:\n  rounds: 3\n  lr: 0.5\nmodel:\n  preset: tiny-vit\n  depth: 2\nsweep:\n  train.lr: [0.1, 0.2]\n  data:\n    alpha: [1]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PFL_TRAIN_ROUNDS", "4")
	cfg, origins, err := LoadFile(path, []string{"train.rounds=5", "model.depth=null", "sweep.data.clients=[4, 8]", "sweep.algorithm.mu=[1]"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "x" || cfg.Device != cuda.CUDA(1) || cfg.Train.Rounds != 5 || cfg.Train.LR != 0.5 || cfg.Model.Depth != nil || cfg.Data.Clients != Default().Data.Clients {
		t.Fatalf("loaded %+v", cfg)
	}
	var keys []string
	for _, a := range cfg.Sweep {
		keys = append(keys, a.Key)
	}
	// the file's axes in its order, the axes --set adds after them, sorted
	if want := []string{"train.lr", "data.alpha", "algorithm.mu", "data.clients"}; !slices.Equal(keys, want) {
		t.Errorf("sweep keys %v, want %v", keys, want)
	}
	for key, want := range map[string]string{"name": "config (" + path + ")", "train.rounds": "--set train.rounds=5",
		"model.depth": "--set model.depth=null", "sweep": "--set"} {
		if origins[key] != want {
			t.Errorf("origin of %s: %q, want %q", key, origins[key], want)
		}
	}
	if g := origins.Given(); len(g) != 2 || g["train.rounds"] == "" || g["name"] != "" {
		t.Errorf("given keys %v", g)
	}
	if b, _ := json.Marshal(cfg); !strings.Contains(string(b), `"device":"cuda:1"`) {
		t.Errorf("config.json's device: %s", b)
	}
}

// TestLoadNamesTheKeyAndTheSource: a misspelt key is named with the keys closest to it, a
// section given one value with its keys, a bad value with the key and its source, in
// plain words (never the decoder's own "'train' has invalid keys: epoch").
func TestLoadNamesTheKeyAndTheSource(t *testing.T) {
	for _, c := range []struct {
		yaml string
		env  []string
		sets []string
		want string
	}{
		{"train:\n  epoch: 3\n", nil, nil, "config (x.yaml): no config key train.epoch (did you mean train.epochs?)"},
		{"trian:\n  rounds: 3\n", nil, nil, "no config key trian.rounds (did you mean train.rounds?)"},
		{"train: 5\n", nil, nil, "config (x.yaml): train is a section (train.rounds, "},
		{"device: tpu\n", nil, nil, `config (x.yaml): device: cuda: device "tpu": want cpu, cuda or cuda:N`},
		{"train:\n  rounds: 3.5\n", nil, nil, "config (x.yaml): train.rounds: 3.5 is not a whole number"},
		{"data:\n  clients:\n", nil, nil, "data.clients: no value"},
		{"seed: 1\nseeds: [1, 2]\n", nil, nil, "config (x.yaml): seed and seeds are both set"},
		{"name: x\n", nil, []string{"train.roundz=2"}, "--set train.roundz=2: no config key train.roundz (did you mean train.rounds?)"},
		{"name: x\n", nil, []string{"seed=null"}, "seed cannot be unset"},
		{"name: x\n", []string{"PFL_TRAIN_ROUNDS=abc"}, nil, "environment variable PFL_TRAIN_ROUNDS (train.rounds): abc is not a whole number"},
		{"name: x\n", []string{"PFL_TRAIN_ROUNDZ=2"}, nil, "environment variable PFL_TRAIN_ROUNDZ names no config key (did you mean PFL_TRAIN_ROUNDS?)"},
		{"", nil, nil, "x.yaml sets no key"},
		{"suite: [\"a: train.lr=0.1\", \"b: train.lr=0.2\"]\n", nil, []string{"train.lr=0.5"}, "every member of the suite sets train.lr"},
	} {
		_, _, err := Load(Sources{File: []byte(c.yaml), Where: "x.yaml", Env: c.env, Sets: c.sets})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v %v: %v; want an error with %q", c.yaml, c.env, c.sets, err, c.want)
		}
	}
}

// TestConfigJSONRoundTrips: a resolved config written as config.json reads back the same
// through the one loader (seed beside seeds, as a grid's config.json holds them, a seed
// beyond 2^53, a sweep), and a config.json that lacks keys is refused.
func TestConfigJSONRoundTrips(t *testing.T) {
	cfg := Default()
	cfg.Seeds = []uint64{1, 1<<63 + 5}
	cfg.Sweep = []SweepAxis{{Key: "data.alpha", Values: []string{"0.1", "0.5"}}}
	cfg.Suite = []string{"fedavg", "p: algorithm.name=partial; algorithm.local_roles=[mlp, head]"}
	cfg.Device = cuda.CUDA(2)
	cfg = cfg.Resolved()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(b) {
		t.Fatalf("config.json read back differs:\n%s\n%s", b, again)
	}
	if _, err := ReadJSON([]byte(`{"name": "x"}`)); err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Errorf("a partial config.json: %v", err)
	}
}

// TestMembersSetTheirKeys: a suite member's keys are read as --set reads them (a list, an
// optional key unset with null, a quoted value holding a semicolon), and an unknown key or
// a section is an error naming the member.
func TestMembersSetTheirKeys(t *testing.T) {
	base := Default()
	base.Model.Preset, base.Model.Heads = "tiny-vit", new(int64(4))
	m, err := ParseMember(`p: algorithm.name=partial; algorithm.local_roles=[mlp, head]; model.heads=null; note="a; b"`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if c.Algorithm.Name != "partial" || !slices.Equal(c.Algorithm.LocalRoles, []string{"mlp", "head"}) || c.Model.Heads != nil || c.Note != "a; b" {
		t.Fatalf("member config %+v", c)
	}
	for entry, want := range map[string]string{
		"x: train.lrr=0.1": "suite member x: no config key train.lrr (did you mean train.lr?)",
		"x: train=0.1":     "suite member x: train is a section, not a key",
		"x: train.lr":      `suite member "x": "train.lr" is not key=value`,
	} {
		m, err := ParseMember(entry)
		if err == nil {
			_, err = m.Apply(base)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", entry, err, want)
		}
	}
}
