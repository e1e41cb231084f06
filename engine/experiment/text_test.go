package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeShakespeare writes a small dataset in FedTP's Shakespeare layout: each role repeats
// its own line, so the next character is learnable and depends on the role.
func writeShakespeare(t *testing.T, roles int) string {
	t.Helper()
	dir := t.TempDir()
	for r := 0; r < roles; r++ {
		line := fmt.Sprintf("ROLE%d: %s. ", r, strings.Repeat(string(rune('a'+r)), 3+r))
		for part, n := range map[string]int{"train.txt": 12, "test.txt": 4} {
			p := filepath.Join(dir, fmt.Sprintf("role_%02d", r), part)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.Repeat(line, n)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestShakespeareFedTP runs FedTP's Shakespeare variant end to end in small: one client
// per role, the text Transformer's W_q, W_k and W_v generated per layer (three hypernetwork
// heads per layer, as the official ShakesHyper), accuracy counted per character.
func TestShakespeareFedTP(t *testing.T) {
	dir := writeShakespeare(t, 6)
	for _, alg := range []string{"fedtp", "fedavg"} {
		t.Run(alg, func(t *testing.T) {
			cfg := filled(Config{Name: alg, Out: t.TempDir(),
				Data:      DataConfig{Dataset: "shakespeare:" + dir, Clients: 6, SeqLen: 10},
				Model:     ModelConfig{Preset: "text-transformer", Depth: 1, Dim: 32, Heads: 2, HeadDim: 16, MLP: 64},
				Algorithm: AlgorithmConfig{Name: alg, Hyper: HyperConfig{Embed: 8, Hidden: 32, LR: ptr(0.5)}},
				Train:     TrainConfig{Rounds: 30, Participation: 0.5, Batch: 16, LR: 0.1, Momentum: 0.9, EvalEvery: 10}})
			res, err := Run(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			// 6 roles, 4 test repeats of a line of 12+r characters, windows of 10+1
			last := res.History[len(res.History)-1].Eval
			for c, n := range last.Count {
				if want := 10 * (4*(12+c) - 10); n != want {
					t.Errorf("client %d: %d characters predicted, want %d", c, n, want)
				}
			}
			t.Logf("%s: character accuracy %.3f", alg, res.Summary.FinalMicro)
			if !(res.Summary.FinalMicro > 0.5) {
				t.Errorf("character accuracy %.3f after 30 rounds on repeated lines", res.Summary.FinalMicro)
			}
			b, _ := os.ReadFile(filepath.Join(res.Dir, "partition.json"))
			if !strings.Contains(string(b), `"role_05"`) {
				t.Errorf("partition.json lacks the roles: %s", b)
			}
			if alg == "fedtp" {
				ck, _ := os.ReadFile(filepath.Join(res.Dir, "checkpoint.safetensors"))
				for _, w := range []string{"w_qs", "w_ks", "w_vs"} {
					if name := "strategy/hyper/heads.encoder.layer_stack.0.slf_attn." + w + ".weight"; !strings.Contains(string(ck), name) {
						t.Errorf("checkpoint lacks %s", name)
					}
				}
			}
			ev, _, err := Evaluate(res.Dir)
			if err != nil || ev.Micro != res.Summary.FinalMicro {
				t.Errorf("evaluating the checkpoint: %v (%v), want %v", ev.Micro, err, res.Summary.FinalMicro)
			}
		})
	}
	// an image model on text, and more roles than the data has, are clear errors
	for _, c := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Model.Preset = "tiny-vit" }, "model.preset"},
		{func(c *Config) { c.Data.Clients = 7 }, "only 6 roles"},
	} {
		cfg := filled(Config{Out: t.TempDir(), Data: DataConfig{Dataset: "shakespeare:" + dir, Clients: 6, SeqLen: 10},
			Model: ModelConfig{Preset: "text-transformer"}, Train: TrainConfig{Rounds: 1, Participation: 0.5}})
		c.mutate(&cfg)
		if _, err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error mentioning %q, got %v", c.want, err)
		}
	}
}
