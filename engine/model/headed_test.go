package model

import (
	"testing"

	"pfl/cuda"
)

// TestHeadedSplitsForward checks Forward = Head(Features) for every Headed model, and that
// TwoHeads predicts generic + personal logits with a personal head of the right shape.
func TestHeadedSplitsForward(t *testing.T) {
	g, _ := cuda.NewGenerator(7, cuda.CPU)
	defer g.Close()
	cases := []struct {
		name  string
		build func() (Headed, error)
		input inputFn
	}{
		{"vit", func() (Headed, error) { return NewViT("v", smallViT(false), 2, cuda.CPU, cuda.Float64, g) }, images(3, 8)},
		{"convnet-bn", func() (Headed, error) {
			return NewConvNet("c", ConvNet(16, 2, 4, true), 2, cuda.CPU, cuda.Float64, g)
		}, images(2, 16)},
		{"focalnet", func() (Headed, error) {
			c := FocalNetConfig{Image: 16, Channels: 2, Patch: 4, Dims: []int64{8, 12}, Depths: []int64{1, 1}, Levels: 2, Window: 3, MLPRatio: 2, Classes: 3}
			return NewFocalNet("f", c, 2, cuda.CPU, cuda.Float64, g)
		}, images(2, 16)},
		{"resnet", func() (Headed, error) { return NewResNet("r", smallResNet(), 2, cuda.CPU, cuda.Float64, g) }, images(2, 16)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			two, err := NewTwoHeads(m, g)
			if err != nil {
				t.Fatal(err)
			}
			defer two.Close()
			s := cuda.NewScope()
			defer s.Close()
			s.SetGradEnabled(false)
			x := c.input(s, g, 2)
			f := m.Features(s, x, nil)
			if f.Dim() != 3 || f.Size(2) != m.FeatureDim() {
				t.Fatalf("features %v, want [2 B %d]", f.Shape(), m.FeatureDim())
			}
			near(t, "forward", values(t, s, m.Forward(s, x, nil)), values(t, s, m.Head(s, f, nil)))
			want := s.Add(m.Head(s, f, nil), two.PersonalHead(s, f, nil))
			near(t, "two heads", values(t, s, two.Forward(s, x, nil)), values(t, s, want))
			if n := len(two.Params().List) - len(m.Params().List); n != 2 {
				t.Fatalf("two heads add %d parameters, want 2", n)
			}
			if got := two.Params().ByRole(RolePersonalHead); len(got) != 2 || got[0].Shape[0] != m.Head(s, f, nil).Size(-1) {
				t.Fatalf("personal head %v", got)
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
