package model

import (
	"math"
	"slices"
	"testing"

	"pfl/cuda"
)

// hostViT runs a lucidrains-layout ViT (linear patch embedding, Q/K/V without bias, no
// dropout, no plug-ins) for one image on the host in float64, from client k's weights,
// returning each block's attention probabilities [heads][T][T].
func hostViT(t *testing.T, m *ViT, k int, img []float64) [][]float64 {
	t.Helper()
	c := m.Cfg
	get := func(name string) []float64 {
		p, ok := m.Params().Get(name)
		if !ok {
			t.Fatalf("no parameter %s", name)
		}
		v, err := p.T.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		n := len(v) / m.Params().K
		return v[k*n : (k+1)*n]
	}
	dim, g, pp, ch := int(c.Dim), int(c.Image/c.Patch), int(c.Patch), int(c.Channels)
	tt := g*g + 1
	lin := func(x []float64, w, b []float64, in, out int) []float64 { // x [n, in] → [n, out]
		n := len(x) / in
		y := make([]float64, n*out)
		for r := 0; r < n; r++ {
			for o := 0; o < out; o++ {
				s := 0.0
				if b != nil {
					s = b[o]
				}
				for i := 0; i < in; i++ {
					s += x[r*in+i] * w[o*in+i]
				}
				y[r*out+o] = s
			}
		}
		return y
	}
	norm := func(x, w, b []float64) []float64 {
		y := make([]float64, len(x))
		for r := 0; r < len(x)/dim; r++ {
			row := x[r*dim : (r+1)*dim]
			var mu, v float64
			for _, a := range row {
				mu += a / float64(dim)
			}
			for _, a := range row {
				v += (a - mu) * (a - mu) / float64(dim)
			}
			for i, a := range row {
				y[r*dim+i] = (a-mu)/math.Sqrt(v+c.Eps)*w[i] + b[i]
			}
		}
		return y
	}
	// 'c (h p1) (w p2) -> (h w) (p1 p2 c)'
	patches := make([]float64, g*g*pp*pp*ch)
	for gy := 0; gy < g; gy++ {
		for gx := 0; gx < g; gx++ {
			for p1 := 0; p1 < pp; p1++ {
				for p2 := 0; p2 < pp; p2++ {
					for cc := 0; cc < ch; cc++ {
						patches[(gy*g+gx)*pp*pp*ch+(p1*pp+p2)*ch+cc] = img[(cc*g*pp+gy*pp+p1)*g*pp+gx*pp+p2]
					}
				}
			}
		}
	}
	x := append(slices.Clone(get("cls_token")), lin(patches, get("patch_embed.proj.weight"), get("patch_embed.proj.bias"), pp*pp*ch, dim)...)
	for i, p := range get("pos_embed") {
		x[i] += p
	}
	heads, d := int(c.Heads), int(c.HeadDim)
	inner := heads * d
	var out [][]float64
	for bl := 0; bl < int(c.Depth); bl++ {
		pre := func(n string) []float64 { return get("blocks." + string(rune('0'+bl)) + "." + n) }
		h := norm(x, pre("norm1.weight"), pre("norm1.bias"))
		qkv := lin(h, pre("attn.qkv.weight"), nil, dim, 3*inner)
		probs := make([]float64, heads*tt*tt)
		att := make([]float64, tt*inner)
		for hd := 0; hd < heads; hd++ {
			for i := 0; i < tt; i++ {
				row := probs[(hd*tt+i)*tt : (hd*tt+i+1)*tt]
				mx := math.Inf(-1)
				for j := 0; j < tt; j++ {
					s := 0.0
					for e := 0; e < d; e++ {
						s += qkv[i*3*inner+hd*d+e] * qkv[j*3*inner+inner+hd*d+e]
					}
					row[j] = s / math.Sqrt(float64(d))
					mx = math.Max(mx, row[j])
				}
				var sum float64
				for j := range row {
					row[j] = math.Exp(row[j] - mx)
					sum += row[j]
				}
				for j := range row {
					row[j] /= sum
					for e := 0; e < d; e++ {
						att[i*inner+hd*d+e] += row[j] * qkv[j*3*inner+2*inner+hd*d+e]
					}
				}
			}
		}
		out = append(out, probs)
		o := lin(att, pre("attn.proj.weight"), pre("attn.proj.bias"), inner, dim)
		for i := range x {
			x[i] += o[i]
		}
		h = norm(x, pre("norm2.weight"), pre("norm2.bias"))
		f := lin(h, pre("mlp.fc1.weight"), pre("mlp.fc1.bias"), dim, int(c.MLP))
		for i, v := range f {
			f[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
		}
		f = lin(f, pre("mlp.fc2.weight"), pre("mlp.fc2.bias"), int(c.MLP), dim)
		for i := range x {
			x[i] += f[i]
		}
	}
	return out
}

// TestCaptureAttention: a capturing pass through a 2-block ViT (float64) records each
// block's probabilities [K, B, heads, T, T], equal to a host computation from the weights,
// and its logits equal the fused kernel's.
func TestCaptureAttention(t *testing.T) {
	c := ViTConfig{Image: 8, Patch: 4, Channels: 3, Dim: 8, Depth: 2, Heads: 2, HeadDim: 4, MLP: 16, Classes: 3, Eps: 1e-5}
	const k, b = 2, 2
	g, _ := cuda.NewGenerator(7, cuda.CPU)
	defer g.Close()
	m, err := NewViT("t", c, k, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	x := s.Randn(g, cuda.Float64, cuda.CPU, k, b, 3, 8, 8)
	var cp Capture
	with := m.Forward(s, x, &Pass{Capture: &cp})
	without := m.Forward(s, x, &Pass{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	a, _ := with.Float64s()
	w, _ := without.Float64s()
	for i := range a {
		if math.Abs(a[i]-w[i]) > 1e-12 {
			t.Fatalf("logit %d: %v with capture, %v without", i, a[i], w[i])
		}
	}
	if len(cp.Attention) != 2 {
		t.Fatalf("%d blocks captured", len(cp.Attention))
	}
	xs, _ := x.Float64s()
	const tt, img = 5, 3 * 8 * 8
	for bl, p := range cp.Attention {
		if !slices.Equal(p.Shape(), []int64{k, b, 2, tt, tt}) {
			t.Fatalf("block %d: shape %v", bl, p.Shape())
		}
	}
	for kk := 0; kk < k; kk++ {
		for bb := 0; bb < b; bb++ {
			want := hostViT(t, m, kk, xs[(kk*b+bb)*img:(kk*b+bb+1)*img])
			for bl, p := range cp.Attention {
				got, _ := p.Float64s()
				n := 2 * tt * tt
				got = got[(kk*b+bb)*n : (kk*b+bb+1)*n]
				for i := range got {
					if math.Abs(got[i]-want[bl][i]) > 1e-12 {
						t.Fatalf("client %d image %d block %d: probability %d = %v, host %v", kk, bb, bl, i, got[i], want[bl][i])
					}
				}
			}
		}
	}
}

// TestCaptureShapes: prompts add queries and keys, concat prefixes add keys; a FocalNet
// records each block's modulator [K, B, C, H, W] and its logits are unchanged.
func TestCaptureShapes(t *testing.T) {
	g, _ := cuda.NewGenerator(3, cuda.CPU)
	defer g.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	c := ViTConfig{Image: 8, Patch: 4, Channels: 3, Dim: 8, Depth: 2, Heads: 2, HeadDim: 4, MLP: 16, Classes: 3, Eps: 1e-5,
		Prompts: 2, Prefix: PrefixConfig{Blocks: 1, Form: PrefixConcat, Kind: PrefixTokens, Length: 3}}
	v, err := NewViT("t", c, 1, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var cp Capture
	v.Forward(s, s.Randn(g, cuda.Float64, cuda.CPU, 1, 2, 3, 8, 8), &Pass{Capture: &cp})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cp.Attention) != 2 || !slices.Equal(cp.Attention[0].Shape(), []int64{1, 2, 2, 7, 7}) || !slices.Equal(cp.Attention[1].Shape(), []int64{1, 2, 2, 7, 10}) {
		t.Fatalf("shapes %v %v", cp.Attention[0].Shape(), cp.Attention[1].Shape())
	}
	fc := FocalNetConfig{Image: 16, Channels: 3, Patch: 4, Dims: []int64{8, 16}, Depths: []int64{1, 2}, Levels: 2, Window: 3, MLPRatio: 2, Classes: 3}
	f, err := NewFocalNet("f", fc, 2, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := s.Randn(g, cuda.Float64, cuda.CPU, 2, 3, 3, 16, 16)
	var fp Capture
	a, _ := f.Forward(s, x, &Pass{Capture: &fp}).Float64s()
	b, _ := f.Forward(s, x, &Pass{}).Float64s()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatal("a capturing pass changed the FocalNet's logits")
	}
	if len(fp.Modulator) != 3 || !slices.Equal(fp.Modulator[0].Shape(), []int64{2, 3, 8, 4, 4}) || !slices.Equal(fp.Modulator[2].Shape(), []int64{2, 3, 16, 2, 2}) {
		t.Fatalf("modulators: %d, %v", len(fp.Modulator), fp.Modulator[0].Shape())
	}
}
