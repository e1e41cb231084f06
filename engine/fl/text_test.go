package fl_test

import (
	"fmt"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// textSetup is 4 roles of short repeated lines, sequences of 8+1 characters.
func textSetup(t *testing.T) *fltest.Setup {
	t.Helper()
	txt := &data.Text{Name: "lines", Vocab: data.Printable}
	for r := 0; r < 4; r++ {
		line := strings.Repeat(fmt.Sprintf("R%d %s. ", r, strings.Repeat("xyz"[r%3:r%3+1], 2+r)), 6)
		c := data.TextClient{ID: fmt.Sprint(r)}
		for i, seq := range []*data.Sequences{&c.Train, &c.Test} {
			part := line[:len(line)*(3+i)/4] // train and test differ in length
			seq.Len = 8
			for j := 0; j+9 <= len(part); j++ {
				for _, ch := range part[j : j+9] {
					seq.Tokens = append(seq.Tokens, int64(strings.IndexRune(data.Printable, ch)))
				}
			}
		}
		txt.Clients = append(txt.Clients, c)
	}
	tf, err := txt.Federate(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := data.UploadText(tf.Train, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	te, err := data.UploadText(tf.Test, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(); te.Close() })
	return &fltest.Setup{Fed: tf.Fed, Train: tr, Test: te}
}

// smallText is a float64 text Transformer with dropout, for exactness tests.
func smallText(k int, g *cuda.Generator) (model.Model, error) {
	return model.Build(model.Spec{Preset: "text-transformer", Vocab: 100, SeqLen: 8, Dim: 16, MLP: 24, Heads: 2, HeadDim: 8, Depth: 2}, k, cuda.CPU, cuda.Float64, g)
}

// TestTextStackedEqualsSequential is FedTP's Shakespeare variant (W_q, W_k, W_v generated
// per layer) and Vanilla Personalized-T on character sequences: stacked clients equal
// clients trained one at a time.
func TestTextStackedEqualsSequential(t *testing.T) {
	st := textSetup(t)
	cfg := fl.Config{Rounds: 2, PerRound: 2, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	for _, strat := range []func() fl.Strategy{
		func() fl.Strategy { return &algo.FedTP{Hyper: fltest.SmallHyper()} },
		func() fl.Strategy { return algo.VanillaPersonalizedT() },
	} {
		t.Run(strat().Name(), func(t *testing.T) { fltest.StackedEqualsSequential(t, st, cfg, strat, smallText) })
	}
}

// TestTextEvaluationCountsCharacters checks that a text evaluation counts one prediction
// per position and that FedTP generates three heads per layer.
func TestTextEvaluationCountsCharacters(t *testing.T) {
	st := textSetup(t)
	f := &algo.FedTP{Hyper: fltest.SmallHyper()}
	r, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Batch: 16, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}, f, st.Fed, st.Train, st.Test, smallText)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := len(f.Net().Targets); n != 6 {
		t.Fatalf("%d hypernetwork heads for 2 layers, want 6 (W_q, W_k, W_v each)", n)
	}
	ev, err := r.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	for c, n := range ev.Count {
		if want := 8 * len(st.Fed.Part.Test[c]); n != want {
			t.Errorf("client %d: %d predictions, want 8 per sequence = %d", c, n, want)
		}
		if ev.Accuracy[c] < 0 || ev.Accuracy[c] > 1 {
			t.Errorf("client %d: accuracy %g", c, ev.Accuracy[c])
		}
	}
}
