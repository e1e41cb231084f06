package model

import (
	"slices"
	"testing"

	"pfl/cuda"
)

// TestOverrideIsDifferentiable checks the hypernetwork plug point: a tensor supplied through
// Pass.Override is used in place of the parameter, and gradients reach whatever produced it.
func TestOverrideIsDifferentiable(t *testing.T) {
	g, _ := cuda.NewGenerator(5, cuda.CPU)
	defer g.Close()
	m, err := NewViT("small", smallViT(false), 2, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := cuda.NewScope()
	defer s.Close()
	x := images(3, 8)(s, g, 2)
	qkv, _ := m.Params().Get("blocks.1.attn.qkv.weight")

	// A toy "hypernetwork": W = phi · 2 for a leaf phi, so dL/dphi = 2 · dL/dW.
	phi := s.Randn(g, cuda.Float64, cuda.CPU, qkv.T.Shape()...)
	phi.SetRequiresGrad(true)
	gen := s.MulScalar(phi, 2)
	y := m.Forward(s, x, &Pass{Override: map[*Param]*cuda.Tensor{qkv: gen}})
	r := s.Randn(g, cuda.Float64, cuda.CPU, y.Shape()...)
	gPhi := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(y, r), false)}, nil, []*cuda.Tensor{phi, qkv.T}, cuda.GradOptions{AllowUnused: true})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if gPhi[1] != nil {
		t.Fatal("the overridden parameter received a gradient: it was used")
	}

	// The same pass with the generated values written into the parameter itself.
	s.SetGradEnabled(false)
	s.CopyFrom(qkv.T, gen)
	s.SetGradEnabled(true)
	y2 := m.Forward(s, x, nil)
	gW := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(y2, r), false)}, nil, []*cuda.Tensor{qkv.T}, cuda.GradOptions{})
	near(t, "output", values(t, s, y), values(t, s, y2))
	near(t, "dL/dphi", values(t, s, gPhi[0]), values(t, s, s.MulScalar(gW[0], 2)))
}

// TestFocalNetSpecSizes: a FocalNet spec's Dim sets the first stage's width and doubles it
// per later stage, Patch the stem and Depth every stage; the sizes reach the built model.
func TestFocalNetSpecSizes(t *testing.T) {
	for _, c := range []struct {
		spec  Spec
		dims  []int64
		patch int64
	}{
		{Spec{Preset: "focalnet-cifar", Dim: 32, Patch: 8, Depth: 2}, []int64{32}, 8},
		{Spec{Preset: "focalnet-t-srf", Dim: 16, Image: 64, Depth: 1}, []int64{16, 32, 64, 128}, 4},
	} {
		m, err := Build(c.spec, 1, cuda.CPU, cuda.Float32, nil)
		if err != nil {
			t.Fatal(err)
		}
		f := m.(*FocalNet)
		if !slices.Equal(f.Cfg.Dims, c.dims) || f.Cfg.Patch != c.patch || f.Cfg.Depths[0] != c.spec.Depth {
			t.Errorf("%+v built %+v", c.spec, f.Cfg)
		}
		m.Close()
	}
}
