package model

import (
	"math"
	"strings"
	"testing"

	"pfl/cuda"
)

// TestConcatAttentionIsEq6Mixture checks FedPerfix's Eq. 6 on the attention pfl's ViT
// blocks run (attention, which block calls for every form): attending over the keys
// [P_k; K] with values [P_v; V] equals (1 − λ)·Attn(q, K, V) + λ·Attn(q, P_k, P_v), with
// λ = Σ_prefix exp(q·p/√d) / Σ_all exp(q·k/√d) per query and head. λ is computed here
// from explicit matrix products and exponentials, not from SDPA. Two prefix lengths: L = 3
// (prefix tokens) and L = T (one prefix per token, the adapter and linear kinds).
//
// Tolerance: each side is a convex combination of the values (N(0, 1) draws, |v| ≲ 4 over
// these 240) with weights that are ratios of sums of at most T + L = 10 exponentials of dot
// products of d = 4 terms. In float64 (u = 2^-53 ≈ 1.1e-16) the logits carry ≲ d·u·|q·k|
// ≲ 4·u·10 of absolute error, so each weight ≲ (40 + 10 + 3)·u of relative error, and each
// output ≲ 10·53·u·4 ≈ 2.4e-13 at worst (typically √n smaller); the mixture adds three
// roundings. 1e-12 leaves a margin of 4 over that worst case, and a missing prefix or a
// wrong λ (between 0.05 and 0.95 here) moves the outputs by 10^-2 or more.
func TestConcatAttentionIsEq6Mixture(t *testing.T) {
	const k, b, tt, heads, d = 2, 3, 5, 2, 4
	for _, l := range []int64{3, tt} {
		s := cuda.NewScope()
		g, _ := cuda.NewGenerator(uint64(10+l), cuda.CPU)
		rnd := func(n int64) *cuda.Tensor { return s.Randn(g, cuda.Float64, cuda.CPU, k, b, n, heads*d) }
		q, key, val, pk, pv := rnd(tt), rnd(tt), rnd(tt), rnd(l), rnd(l)
		full := attention(s, q, key, val, pk, pv, heads, nil) // [K, B, T, I]
		global := attention(s, q, key, val, nil, nil, heads, nil)
		personal := attention(s, q, pk, pv, nil, nil, heads, nil)

		split := func(z *cuda.Tensor) *cuda.Tensor { // [K, B, n, I] -> [K, B, H, n, d]
			return s.Permute(s.Reshape(z, k, b, z.Size(2), heads, d), 0, 1, 3, 2, 4)
		}
		mass := func(keys *cuda.Tensor) *cuda.Tensor { // Σ_keys exp(q·k/√d): [K, B, H, T]
			logits := s.MulScalar(s.MatMul(split(q), s.Transpose(split(keys), 3, 4)), 1/math.Sqrt(d))
			return s.Sum(s.Exp(logits), false, 4)
		}
		mp := mass(pk)
		// λ [K, B, H, T], then [K, B, T, H, 1] against the outputs as [K, B, T, H, d]
		lambda := s.Div(mp, s.Add(mp, mass(key)))
		lam := s.Unsqueeze(s.Permute(lambda, 0, 1, 3, 2), 4)
		byHead := func(z *cuda.Tensor) *cuda.Tensor { return s.Reshape(z, k, b, tt, heads, d) }
		mix := s.Add(byHead(global), s.Mul(lam, s.Sub(byHead(personal), byHead(global))))

		lv := values(t, s, lambda)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range lv {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo < 0.05 || hi > 0.95 {
			t.Fatalf("L = %d: λ in [%.3f, %.3f]: the check needs a mixture away from 0 and 1", l, lo, hi)
		}
		got, want := values(t, s, full), values(t, s, s.Reshape(mix, k, b, tt, heads*d))
		worst := 0.0
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("L = %d: concat attention[%d] = %.17g, Eq. 6's mixture %.17g", l, i, got[i], want[i])
			}
			worst = max(worst, math.Abs(got[i]-want[i]))
		}
		t.Logf("L = %d: λ in [%.3f, %.3f], largest difference %.2g", l, lo, hi, worst)
		g.Close()
		s.Close()
	}
}

// TestPrefixZeroAddIsTheModelWithout: the official code's Prefix-Z (kind linear, zero init,
// added to K and V) leaves the model at initialization exactly as it is without prefixes:
// bitwise the same logits, in float32 and float64, K + s·0 being K. The same zero prefix in
// the concat form does not: its zero keys take softmax mass from the tokens' (Eq. 6).
func TestPrefixZeroAddIsTheModelWithout(t *testing.T) {
	for _, dt := range []cuda.DType{cuda.Float32, cuda.Float64} {
		with := smallViT(true)
		with.Prefix = PrefixConfig{Blocks: with.Depth, Scale: 1.5, Kind: PrefixLinear, Init: PrefixInitZero}
		without := with
		without.Prefix = PrefixConfig{}
		g, _ := cuda.NewGenerator(3, cuda.CPU)
		a, err := NewViT("prefix-z", with, 2, cuda.CPU, dt, g)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewViT("plain", without, 2, cuda.CPU, dt, g)
		if err != nil {
			t.Fatal(err)
		}
		s := cuda.NewScope()
		s.SetGradEnabled(false)
		prefixes := 0
		for _, p := range a.Params().List {
			if q, ok := b.Params().Get(p.Name); ok {
				s.CopyFrom(q.T, p.T)
				continue
			}
			prefixes++
			for _, v := range values(t, s, s.To(p.T, cuda.Float64)) {
				if v != 0 {
					t.Fatalf("%s starts at %g, not 0", p.Name, v)
				}
			}
		}
		if prefixes != 2*int(with.Depth) {
			t.Fatalf("%d prefix parameters, want kv.weight and kv.bias in %d blocks", prefixes, with.Depth)
		}
		x := s.Randn(g, dt, cuda.CPU, 2, 3, 3, 8, 8)
		ya := values(t, s, s.To(a.Forward(s, x, &Pass{}), cuda.Float64))
		yb := values(t, s, s.To(b.Forward(s, x, &Pass{}), cuda.Float64))
		for i := range ya {
			if math.Float64bits(ya[i]) != math.Float64bits(yb[i]) {
				t.Fatalf("%v: logit %d is %.17g with the zero prefix, %.17g without", dt, i, ya[i], yb[i])
			}
		}

		concat := with
		concat.Prefix.Form = PrefixConcat
		c, err := NewViT("prefix-z-concat", concat, 2, cuda.CPU, dt, g)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range c.Params().List {
			s.CopyFrom(p.T, a.Params().List[i].T)
		}
		yc := values(t, s, s.To(c.Forward(s, x, &Pass{}), cuda.Float64))
		moved := 0.0
		for i := range yc {
			moved = max(moved, math.Abs(yc[i]-yb[i]))
		}
		if moved < 1e-3 {
			t.Errorf("%v: zero prefixes concatenated as keys move the logits by %g only", dt, moved)
		}
		s.Close()
		a.Close()
		b.Close()
		c.Close()
		g.Close()
	}
}

// TestPrefixConfigErrors: a prefix or MLP adapter that cannot be built, or a field its kind
// does not read, is refused with an error naming the field; the valid variants build.
func TestPrefixConfigErrors(t *testing.T) {
	for _, c := range []struct {
		prefix  PrefixConfig
		adapter MLPAdapterConfig
		want    string // "" : valid
	}{
		{PrefixConfig{Blocks: 2, Mid: 4}, MLPAdapterConfig{}, ""},
		{PrefixConfig{Blocks: 2, Mid: 4, Kind: PrefixAdapter, Form: PrefixConcat, Init: PrefixInitZero}, MLPAdapterConfig{}, ""},
		{PrefixConfig{Blocks: 1, Kind: PrefixLinear, Form: PrefixAdd, Init: PrefixInitDefault}, MLPAdapterConfig{}, ""},
		{PrefixConfig{Blocks: 1, Kind: PrefixTokens, Form: PrefixConcat, Length: 3}, MLPAdapterConfig{Mid: 2, Shared: true}, ""},
		{PrefixConfig{Blocks: 3, Mid: 4}, MLPAdapterConfig{}, "Prefix.Blocks"},
		{PrefixConfig{Blocks: -1, Mid: 4}, MLPAdapterConfig{}, "Prefix.Blocks"},
		{PrefixConfig{Kind: PrefixLinear}, MLPAdapterConfig{}, "Prefix.Blocks"},
		{PrefixConfig{Mid: 4}, MLPAdapterConfig{}, "Prefix.Blocks"},
		{PrefixConfig{Blocks: 1, Kind: "lora"}, MLPAdapterConfig{}, "Prefix.Kind"},
		{PrefixConfig{Blocks: 1, Mid: 4, Form: "prepend"}, MLPAdapterConfig{}, "Prefix.Form"},
		{PrefixConfig{Blocks: 1, Mid: 4, Init: "xavier"}, MLPAdapterConfig{}, "Prefix.Init"},
		{PrefixConfig{Blocks: 1, Mid: 4, Scale: math.NaN()}, MLPAdapterConfig{}, "Prefix.Scale"},
		{PrefixConfig{Blocks: 1}, MLPAdapterConfig{}, "Prefix.Mid"},
		{PrefixConfig{Blocks: 1, Kind: PrefixLinear, Mid: 4}, MLPAdapterConfig{}, "Prefix.Mid"},
		{PrefixConfig{Blocks: 1, Kind: PrefixTokens, Form: PrefixConcat}, MLPAdapterConfig{}, "Prefix.Length"},
		{PrefixConfig{Blocks: 1, Mid: 4, Length: 3}, MLPAdapterConfig{}, "Prefix.Length"},
		{PrefixConfig{Blocks: 1, Kind: PrefixTokens, Length: 3}, MLPAdapterConfig{}, "Prefix.Form"},
		{PrefixConfig{}, MLPAdapterConfig{Shared: true}, "MLPAdapter.Mid"},
		{PrefixConfig{}, MLPAdapterConfig{Mid: -1}, "MLPAdapter.Mid"},
		{PrefixConfig{}, MLPAdapterConfig{Mid: 2, Scale: math.Inf(1)}, "MLPAdapter.Scale"},
	} {
		cfg := smallViT(true)
		cfg.Prefix, cfg.MLPAdapter = c.prefix, c.adapter
		_, err := NewViT("small", cfg, 1, cuda.CPU, cuda.Float64, nil)
		// the same through the model factory
		_, specErr := Spec{Preset: "vit-s16", Image: 8, Patch: 4, Dim: 16, Depth: 2, Heads: 2, HeadDim: 8, MLP: 24,
			Prefix: c.prefix, Adapter: c.adapter}.Builder()
		switch {
		case c.want == "" && (err != nil || specErr != nil):
			t.Errorf("%+v, %+v: %v / %v", c.prefix, c.adapter, err, specErr)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v, %+v: error %v, want one naming %s", c.prefix, c.adapter, err, c.want)
		case c.want != "" && (specErr == nil || !strings.Contains(specErr.Error(), strings.TrimPrefix(c.want, "MLP"))): // Spec's field is Adapter
			t.Errorf("Spec with %+v, %+v: error %v, want one naming %s", c.prefix, c.adapter, specErr, c.want)
		}
	}
	// a model without prefixes refuses one, naming the field
	if _, err := (Spec{Preset: "convnet", Prefix: PrefixConfig{Blocks: 1, Kind: PrefixLinear}}).Builder(); err == nil || !strings.Contains(err.Error(), "Prefix") {
		t.Errorf("convnet with a prefix: %v", err)
	}
}
