package config

import (
	"encoding/json"
	"testing"
)

// FuzzConfigJSON decodes arbitrary bytes as a run's config.json: an error, or a config
// that Validate accepts or refuses with an error — never a panic.
func FuzzConfigJSON(f *testing.F) {
	good, _ := json.Marshal(Default().Resolved())
	f.Add(good)
	f.Add([]byte(`{"train":{"rounds":3.5}}`))
	f.Add([]byte(`{"data":{"clients":-1},"algorithm":{"hyper":{"lr":null}}}`))
	f.Add([]byte(`{"name":"../x"} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ReadJSON(b)
		if err != nil {
			return
		}
		cfg.Out = "runs"
		_ = cfg.Resolved().Validate()
		if _, err := Flatten(cfg); err != nil {
			t.Fatalf("the keys of a decoded config: %v", err)
		}
	})
}

// FuzzLoad reads arbitrary bytes as a YAML config file and arbitrary text as a --set: an
// error naming what is wrong, or a config that Validate accepts or refuses — never a
// panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("train:\n  rounds: 3\nsweep:\n  data.alpha: [0.1, 0.5]\n"), "suite=[fedavg, \"p: model.heads=null\"]")
	f.Add([]byte("suite: [a, b]\nseeds: [1, 2]\n"), "sweep.train.lr=[0.1]")
	f.Add([]byte("model: {depth: [1]}\n"), "device=cuda:x")
	f.Fuzz(func(t *testing.T, b []byte, set string) {
		cfg, _, err := Load(Sources{File: b, Where: "fuzz.yaml", Sets: []string{set}})
		if err != nil {
			return
		}
		_ = cfg.Resolved().Validate()
	})
}
