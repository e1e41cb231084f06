package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/internal/testenv"
)

// shakespeareLine and writeShakespeare are the shared test dataset's.
var (
	shakespeareLine  = testenv.ShakespeareLine
	writeShakespeare = testenv.WriteShakespeare
)

// blindCharAccuracy is the best character accuracy on writeShakespeare's test texts of a
// predictor that never reads the characters it is given, even one that knows each role's
// text and the position within the window: for every role and window position j, the most
// frequent character at that position over all windows of seqLen+1 characters, counted
// over all roles.
func blindCharAccuracy(roles, seqLen int) float64 {
	best, all := 0, 0
	for r := 0; r < roles; r++ {
		text := strings.Repeat(shakespeareLine(r), 4)
		windows := len(text) - seqLen
		for j := 1; j <= seqLen; j++ {
			count := map[byte]int{}
			top := 0
			for i := 0; i < windows; i++ {
				count[text[i+j]]++
				top = max(top, count[text[i+j]])
			}
			best += top
			all += windows
		}
	}
	return float64(best) / float64(all)
}

// TestShakespeareFedTP runs FedTP's Shakespeare variant end to end in small: one client
// per role, the text Transformer's W_q, W_k and W_v generated per layer (three hypernetwork
// heads per layer, as the official ShakesHyper), accuracy counted per character.
func TestShakespeareFedTP(t *testing.T) {
	dir := writeShakespeare(t, 6)
	for _, alg := range []string{"fedtp", "fedavg"} {
		t.Run(alg, func(t *testing.T) {
			cfg := config.Default()
			cfg.Name, cfg.Out = alg, t.TempDir()
			cfg.Data.Dataset, cfg.Data.Clients, cfg.Data.SeqLen = "shakespeare:"+dir, 6, 10
			cfg.Model.Preset = "text-transformer"
			cfg.Model.Depth, cfg.Model.Dim, cfg.Model.Heads, cfg.Model.HeadDim, cfg.Model.MLP = new(int64(1)), new(int64(32)), new(int64(2)), new(int64(16)), new(int64(64))
			cfg.Algorithm.Name = alg
			cfg.Algorithm.Hyper.Embed, cfg.Algorithm.Hyper.Hidden, cfg.Algorithm.Hyper.LR = ptr(int64(8)), ptr(int64(32)), ptr(0.5)
			cfg.Train.Rounds, cfg.Train.Participation, cfg.Train.Batch = 40, 0.5, 16
			cfg.Train.LR, cfg.Train.Momentum, cfg.Train.EvalEvery = 0.2, 0.9, 10
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
			// The model must beat the best predictor that ignores the characters it reads
			// (blindCharAccuracy, 0.39 here) by z = 4 standard errors. Trials are not the
			// 2880 predictions: the test text repeats each line, so windows at the same
			// offset of different repeats are identical, and the 10 predictions of one
			// window share its characters. Counting each distinct window once, as if its 10
			// predictions were a single trial, leaves n = Σ_r (12+r) = 87 trials, and a
			// predictor whose answers do not depend on the target would exceed the blind
			// accuracy by 4·√(p(1−p)/n) ≈ 0.2 with probability below 4e-5. The
			// models reach about 0.8 (training plateaus there: the first characters of a
			// window have too little context to tell where in the line it starts).
			blind, acc := blindCharAccuracy(6, 10), res.Summary.FinalMicro
			const z, trials = 4, 6*12 + 15
			floor := blind + z*math.Sqrt(blind*(1-blind)/trials)
			t.Logf("%s: character accuracy %.3f (blind %.3f, floor %.3f)", alg, acc, blind, floor)
			if !(acc > floor) {
				t.Errorf("character accuracy %.3f after %d rounds on repeated lines: not clearly above the blind %.3f (floor %.3f)",
					acc, cfg.Train.Rounds, blind, floor)
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
		mutate func(*config.Config)
		want   string
	}{
		{func(c *config.Config) { c.Model.Preset = "tiny-vit" }, "model.preset"},
		{func(c *config.Config) { c.Data.Clients = 7 }, "only 6 roles"},
	} {
		cfg := config.Default()
		cfg.Out = t.TempDir()
		cfg.Data.Dataset, cfg.Data.Clients, cfg.Data.SeqLen = "shakespeare:"+dir, 6, 10
		cfg.Model.Preset = "text-transformer"
		cfg.Train.Rounds, cfg.Train.Participation = 1, 0.5
		c.mutate(&cfg)
		if _, err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error mentioning %q, got %v", c.want, err)
		}
	}
}
