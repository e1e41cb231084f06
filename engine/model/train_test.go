package model

import (
	"math"
	"testing"

	"pfl/cuda"
)

// stackedLoss is Σ_k mean_b CE(y_kb, t_kb): each client's own mean loss, summed, so that
// each client row gets exactly the gradient of its own loss.
func stackedLoss(s *cuda.Scope, logits, target *cuda.Tensor) *cuda.Tensor {
	k := logits.Size(0)
	classes := logits.Size(-1)
	per := s.CrossEntropy(s.Reshape(logits, -1, classes), s.Reshape(target, -1), nil, cuda.ReduceNone, 0)
	return s.Sum(s.Mean(s.Reshape(per, k, -1), false, 1), false)
}

func TestEveryModelLearns(t *testing.T) {
	const k = 2
	imageTask := func(side, ch, classes int64) func(s *cuda.Scope, g *cuda.Generator) (x, y *cuda.Tensor) {
		return func(s *cuda.Scope, g *cuda.Generator) (*cuda.Tensor, *cuda.Tensor) {
			// each class is a fixed random image; samples add noise of a third of its scale
			means := s.Randn(g, cuda.Float32, cuda.CPU, classes, ch*side*side)
			y := s.RandInt(g, 0, classes, cuda.CPU, k, 8)
			x := s.Add(s.IndexSelect(means, 0, s.Reshape(y, -1)), s.MulScalar(s.Randn(g, cuda.Float32, cuda.CPU, k*8, ch*side*side), 0.3))
			return s.Reshape(x, k, 8, ch, side, side), y
		}
	}
	textTask := func(vocab, t int64) func(s *cuda.Scope, g *cuda.Generator) (x, y *cuda.Tensor) {
		return func(s *cuda.Scope, g *cuda.Generator) (*cuda.Tensor, *cuda.Tensor) {
			// sequences count up modulo vocab from varied starts: the next character is a
			// function of the current one
			var seq []int64
			for i := int64(0); i < k*8; i++ {
				for p := int64(0); p <= t; p++ {
					seq = append(seq, (i*3+p)%vocab)
				}
			}
			all := cuda.FromSlice(s, cuda.CPU, seq, k, 8, t+1)
			return s.Narrow(all, 2, 0, t), s.Narrow(all, 2, 1, t)
		}
	}
	cases := []struct {
		name  string
		build func(g *cuda.Generator) (Model, error)
		data  func(s *cuda.Scope, g *cuda.Generator) (x, y *cuda.Tensor)
		lr    float64
	}{
		{"vit", func(g *cuda.Generator) (Model, error) {
			c := smallViT(false)
			return NewViT("vit", c, k, cuda.CPU, cuda.Float32, g)
		}, imageTask(8, 3, 5), 0.05},
		{"vit-timm", func(g *cuda.Generator) (Model, error) {
			return NewViT("vit", smallViT(true), k, cuda.CPU, cuda.Float32, g)
		}, imageTask(8, 3, 5), 0.1},
		{"focalnet", func(g *cuda.Generator) (Model, error) {
			c := FocalNetConfig{Image: 16, Channels: 2, Patch: 4, Dims: []int64{8, 12}, Depths: []int64{1, 1}, Levels: 2, Window: 3, MLPRatio: 2, Classes: 3}
			return NewFocalNet("focal", c, k, cuda.CPU, cuda.Float32, g)
		}, imageTask(16, 2, 3), 0.1},
		{"convnet", func(g *cuda.Generator) (Model, error) {
			return NewConvNet("cnn", ConvNet(16, 2, 4, false), k, cuda.CPU, cuda.Float32, g)
		}, imageTask(16, 2, 4), 0.05},
		{"convnet-bn", func(g *cuda.Generator) (Model, error) {
			return NewConvNet("cnn", ConvNet(16, 2, 4, true), k, cuda.CPU, cuda.Float32, g)
		}, imageTask(16, 2, 4), 0.05},
		{"resnet", func(g *cuda.Generator) (Model, error) {
			return NewResNet("resnet", smallResNet(), k, cuda.CPU, cuda.Float32, g)
		}, imageTask(16, 2, 3), 0.05},
		{"text-transformer", func(g *cuda.Generator) (Model, error) {
			c := TextConfig{Vocab: 11, Dim: 16, FFN: 24, Heads: 2, HeadDim: 8, Depth: 2, SeqLen: 6, MaxLen: 10, Dropout: 0.1, Causal: true}
			return NewTextModel("text", c, k, cuda.CPU, cuda.Float32, g)
		}, textTask(11, 6), 1.0},
		{"lstm", func(g *cuda.Generator) (Model, error) {
			return NewLSTM("lstm", LSTMConfig{Vocab: 11, Embed: 4, Hidden: 16, Layers: 2, SeqLen: 6}, k, cuda.CPU, cuda.Float32, g)
		}, textTask(11, 6), 2.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, _ := cuda.NewGenerator(7, cuda.CPU)
			defer g.Close()
			m, err := c.build(g)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s := cuda.NewScope()
			defer s.Close()
			x, y := c.data(s, g)
			params := Tensors(m.Params().Trainable())
			step := cuda.NewScope()
			defer step.Close()
			var first, last float64
			for i := 0; i < 40; i++ {
				step.Reset()
				loss := stackedLoss(step, m.Forward(step, x, &Pass{Train: true, Gen: g}), y)
				grads := step.Grad([]*cuda.Tensor{loss}, nil, params, cuda.GradOptions{})
				step.ForeachAdd(params, grads, -c.lr)
				if err := step.Err(); err != nil {
					t.Fatal(err)
				}
				v, _ := loss.Item()
				if i == 0 {
					first = v
				}
				last = v
			}
			t.Logf("loss %.3f -> %.3f", first, last)
			if math.IsNaN(last) || last > 0.7*first {
				t.Fatalf("loss %.3f -> %.3f: did not drop by 30%%", first, last)
			}
		})
	}
}

func TestCausalMaskHidesTheFuture(t *testing.T) {
	for _, causal := range []bool{true, false} {
		g, _ := cuda.NewGenerator(9, cuda.CPU)
		c := TextConfig{Vocab: 11, Dim: 16, FFN: 24, Heads: 2, HeadDim: 8, Depth: 2, SeqLen: 8, MaxLen: 10, Causal: causal}
		m, err := NewTextModel("text", c, 1, cuda.CPU, cuda.Float64, g)
		if err != nil {
			t.Fatal(err)
		}
		s := cuda.NewScope()
		a := cuda.FromSlice(s, cuda.CPU, []int64{1, 2, 3, 4, 5, 6, 7, 8}, 1, 1, 8)
		b := cuda.FromSlice(s, cuda.CPU, []int64{1, 2, 3, 4, 9, 6, 7, 8}, 1, 1, 8) // position 4 changed
		ya := values(t, s, m.Forward(s, a, nil))
		yb := values(t, s, m.Forward(s, b, nil))
		changed := func(pos int) bool {
			for i := pos * 11; i < (pos+1)*11; i++ {
				if ya[i] != yb[i] {
					return true
				}
			}
			return false
		}
		for pos := 0; pos < 8; pos++ {
			want := pos >= 4 || !causal // without the mask every position sees the change
			if changed(pos) != want {
				t.Errorf("causal=%v: output at position %d changed=%v, want %v", causal, pos, changed(pos), want)
			}
		}
		s.Close()
		m.Close()
		g.Close()
	}
}
