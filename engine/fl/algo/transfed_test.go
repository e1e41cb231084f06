package algo

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// recording is what one round's server update saw: the rows it generated for, the
// generated and trained parameters, the clients' weights, and the hypernetwork's
// parameters before and after the update.
type recording struct {
	rows, last         []int64 // the round's; the latest Generate's
	generated, trained [][]float64
	weights            []float64
	before, after      [][]float64
}

func floatsOf(ts []*cuda.Tensor) [][]float64 {
	var out [][]float64
	for _, t := range ts {
		v, _ := t.Float64s()
		out = append(out, v)
	}
	return out
}

// generate notes the rows of a Generate call.
func (r *recording) generate(rows *cuda.Tensor) { r.last, _ = rows.Int64s() }

// wrap records the Generate calls of h and the server update its LearnSum and LearnApply
// make on its hypernetwork.
func (r *recording) wrap(h fl.GenerateHooks) fl.GenerateHooks {
	generate, sum, apply := h.Generate, h.LearnSum, h.LearnApply
	h.Generate = func(s *cuda.Scope, rows *cuda.Tensor) []*cuda.Tensor {
		r.generate(rows)
		return generate(s, rows)
	}
	h.LearnSum = func(s *cuda.Scope, generated, trained []*cuda.Tensor, weights *cuda.Tensor) []*cuda.Tensor {
		r.rows = r.last // evaluation generates again after the update
		r.generated, r.trained, r.before = floatsOf(generated), floatsOf(trained), floatsOf(h.Net().Params())
		r.weights, _ = weights.Float64s()
		return sum(s, generated, trained, weights)
	}
	h.LearnApply = func(s *cuda.Scope, g []*cuda.Tensor) {
		apply(s, g)
		r.after = floatsOf(h.Net().Params())
	}
	return h
}

// recordedTransFed is TransFed that records its server update.
type recordedTransFed struct {
	*TransFed
	recording
}

func (r *recordedTransFed) GenerateHooks() fl.GenerateHooks {
	return r.wrap(r.TransFed.GenerateHooks())
}

// TestTransFedServerUpdateIsTheWeightedJacobianProduct runs one TransFed round on a tiny
// FocalNet (float64) and checks the server's update of every hypernetwork parameter (φ and
// every embedding z_i) against Algorithm 1's Σ_i (m_i/M) J_iᵀ ΔP_i, with ΔP_i = P_i⁰ − P_iᴱ
// the change of client i's generated f through local training and every Jacobian column
// J_i[:, j] = ∂P_i/∂φ_j by central finite differences of the hypernetwork's output. The
// hypernetwork steps with β = 1 and no momentum or weight decay, so its update is that sum
// itself. Full heads and rank-2 heads (W0 + U V).
func TestTransFedServerUpdateIsTheWeightedJacobianProduct(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 1, PerRound: 3, Epochs: 1, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 7, Device: cuda.CPU, DType: cuda.Float64}
	for _, rank := range []int64{0, 2} {
		t.Run(map[int64]string{0: "full", 2: "rank-2"}[rank], func(t *testing.T) {
			rec := &recordedTransFed{TransFed: transFed(fl.Options{Rank: fltest.RankOf(rank), Generate: []model.Role{model.RoleFocalF},
				Hyper: hyper.Config{Embed: 3, Hidden: 4, Layers: 2, LR: 1, Momentum: -1, WeightDecay: -1}})}
			r, err := fl.New(cfg, rec, st.Fed, st.Train, st.Test, fltest.TinyFocal)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var gen []string
			for _, p := range fltest.Declared(t, fltest.TinyFocal).Params().List {
				generated, stored := rec.Generated(p), fltest.Rows(t, r, p.Name) != nil
				if generated {
					gen = append(gen, p.Name)
				}
				if generated != (p.Role == model.RoleFocalF) || stored {
					t.Fatalf("%s: generated %v, stored %v", p.Name, generated, stored)
				}
			}
			want := []string{"layers.0.blocks.0.modulation.f.weight", "layers.0.blocks.0.modulation.f.bias",
				"layers.0.blocks.1.modulation.f.weight", "layers.0.blocks.1.modulation.f.bias"}
			if !slices.Equal(gen, want) {
				t.Fatalf("generated %v, want %v", gen, want)
			}
			if got := rec.Net().Cfg.Rank; got != rank {
				t.Fatalf("rank %d, want %d", got, rank)
			}
			if _, err := r.Round(0); err != nil {
				t.Fatal(err)
			}
			checkServerUpdate(t, rec.Net(), &rec.recording, 5)
		})
	}
}

func TestTransFedStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-5, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	small := hyper.Config{Embed: 8, Hidden: 12, Layers: 4}
	for _, c := range []struct {
		name  string
		strat func() fl.Strategy
	}{
		{"transfed", func() fl.Strategy { return transFed(fl.Options{Hyper: small}) }},
		{"transfed-rank-2", func() fl.Strategy { return transFed(fl.Options{Hyper: small, Rank: fltest.RankOf(2)}) }},
		{"transfed-f-rank-3", func() fl.Strategy {
			return transFed(fl.Options{Hyper: small, Rank: fltest.RankOf(3), Generate: []model.Role{model.RoleFocalF}})
		}},
		{"vanilla-c-t", VanillaCustomizedT},
	} {
		t.Run(c.name, func(t *testing.T) { fltest.StackedEqualsSequential(t, st, cfg, c.strat, fltest.TinyFocal) })
	}
}

// TestTransFedDefaults: the registry's transfed generates the whole focal-modulation layer
// (f, context convolutions, h, proj) with automatically sized heads unless
// algorithm.generate and algorithm.hyper.rank say otherwise; fedtp keeps attn_qkv and full
// heads; vanilla-c-t keeps exactly the focal-modulation roles local, the parameters the
// default transfed generates.
func TestTransFedDefaults(t *testing.T) {
	tf := func(o fl.Options) *TransFed {
		a, err := fl.LookupAlgorithm("transfed")
		if err != nil {
			t.Fatal(err)
		}
		return a.New(o).(*TransFed)
	}
	focal := []model.Role{model.RoleFocalF, model.RoleFocalCtx, model.RoleFocalH, model.RoleFocalProj}
	if d := tf(fl.Options{}); !slices.Equal(d.Roles, focal) || d.Hyper.Rank != hyper.RankAuto || d.Name() != "transfed" {
		t.Errorf("transfed defaults: roles %v, rank %d, name %s", d.Roles, d.Hyper.Rank, d.Name())
	}
	if d := tf(fl.Options{Generate: []model.Role{model.RoleFocalH}, Rank: fltest.RankOf(0)}); !slices.Equal(d.Roles, []model.Role{model.RoleFocalH}) || d.Hyper.Rank != 0 {
		t.Errorf("transfed with generate [focal_h], rank 0: roles %v, rank %d", d.Roles, d.Hyper.Rank)
	}
	a, _ := fl.LookupAlgorithm("fedtp")
	if f := a.New(fl.Options{}).(*FedTP); !slices.Equal(f.roles(), []model.Role{model.RoleAttnQKV}) || f.Hyper.Rank != 0 {
		t.Errorf("fedtp defaults: roles %v, rank %d", f.roles(), f.Hyper.Rank)
	}
	if f := a.New(fl.Options{Rank: fltest.RankOf(8)}).(*FedTP); f.Hyper.Rank != 8 {
		t.Errorf("fedtp with rank 8: %d", f.Hyper.Rank)
	}

	// head sizes: focalnet-cifar's focal-modulation heads stay full (8 blocks × 151 ×
	// (f 128·259 + 259, context convolutions 128·9 + 128·25, h and proj 128·128 + 128));
	// FocalNet-T's 4,335,204 f outputs alone would need 654.6 M full-head parameters: rank 32
	onlyF := []model.Role{model.RoleFocalF}
	heads := func(preset string, o fl.Options) float64 {
		m, err := model.Build(model.Spec{Preset: preset}, 1, cuda.CPU, cuda.Float32, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		return tf(o).HyperParams(m, 100)
	}
	const embTrunk = 100*128 + (128+1)*150 + 3*(150+1)*150
	if got, want := heads("focalnet-cifar", fl.Options{}), float64(embTrunk+151*8*((128*259+259)+(128*9+128*25)+2*(128*128+128))); got != want {
		t.Errorf("focalnet-cifar: %g hypernetwork parameters, want %g (full heads)", got, want)
	}
	if got, want := heads("focalnet-cifar", fl.Options{Generate: onlyF}), float64(embTrunk+151*8*(128*259+259)); got != want {
		t.Errorf("focalnet-cifar, f alone: %g hypernetwork parameters, want %g (full heads)", got, want)
	}
	if got, want := heads("focalnet-t-srf", fl.Options{Rank: fltest.RankOf(0), Generate: onlyF}), float64(embTrunk+151*4335204); got != want {
		t.Errorf("focalnet-t-srf, rank 0: %g hypernetwork parameters, want %g", got, want)
	}
	auto, r32 := heads("focalnet-t-srf", fl.Options{}), heads("focalnet-t-srf", fl.Options{Rank: fltest.RankOf(32)})
	if auto != r32 || auto > hyper.AutoFullHeads {
		t.Errorf("focalnet-t-srf: %g hypernetwork parameters by default, %g at rank 32", auto, r32)
	}
	t.Logf("focalnet-t-srf: %.0f hypernetwork parameters at rank 32", auto)

	vit, _ := model.Build(model.Spec{Preset: "tiny-vit", Depth: 2}, 1, cuda.CPU, cuda.Float32, nil)
	focalNet, _ := model.Build(model.Spec{Preset: "focalnet-cifar", Depth: 1}, 1, cuda.CPU, cuda.Float32, nil)
	defer vit.Close()
	defer focalNet.Close()
	v, d := VanillaCustomizedT(), tf(fl.Options{})
	personal := 0
	for _, p := range focalNet.Params().List {
		if d.Generated(p) != v.Personal(p) {
			t.Errorf("%s: transfed generates it %v, vanilla-c-t keeps it local %v", p.Name, d.Generated(p), v.Personal(p))
		}
		want := p.Role == model.RoleFocalF || p.Role == model.RoleFocalCtx || p.Role == model.RoleFocalH || p.Role == model.RoleFocalProj
		if v.Personal(p) != want {
			t.Errorf("vanilla-c-t: %s personal %v", p.Name, !want)
		}
		if want {
			personal++
		}
	}
	if personal != 8 { // one block: f, h and proj (weight and bias), 2 context convolutions
		t.Errorf("vanilla-c-t keeps %d parameters local, want 8", personal)
	}
}

// TestTransFedNeedsAFocalNet: transfed and vanilla-c-t refuse a model without focal
// modulation, by preset (Shape, before anything is built) and by the built model (Bind).
func TestTransFedNeedsAFocalNet(t *testing.T) {
	for _, s := range []fl.Strategy{transFed(fl.Options{}), transFed(fl.Options{Generate: []model.Role{model.RoleMLP}}), VanillaCustomizedT()} {
		if _, err := fl.Shape(s, model.Spec{Preset: "focalnet-cifar"}); err != nil {
			t.Errorf("%s on focalnet-cifar: %v", s.Name(), err)
		}
		_, err := fl.Shape(s, model.Spec{Preset: "tiny-vit"})
		if err == nil || !strings.Contains(err.Error(), "FocalNet") || !strings.Contains(err.Error(), "focalnet-cifar") {
			t.Errorf("%s on tiny-vit: %v", s.Name(), err)
		}
	}
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	for _, s := range []fl.Strategy{transFed(fl.Options{Generate: []model.Role{model.RoleMLP}}), VanillaCustomizedT()} {
		_, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU, DType: cuda.Float64}, s, st.Fed, st.Train, st.Test, fltest.SmallViT)
		if err == nil || !strings.Contains(err.Error(), "FocalNet") {
			t.Errorf("%s on a ViT: %v", s.Name(), err)
		}
	}
}

// checkServerUpdate checks the recorded server update of net, a hypernetwork that stepped
// with β = 1 and no momentum or weight decay (so that its update is the gradient itself),
// element by element against Σ_i (m_i/M) J_iᵀ ΔW_i, with ΔW_i = W_i⁰ − W_iᴱ the change of
// client i's generated parameters through local training and every Jacobian column
// J_i[:, j] = ∂W_i/∂φ_j by central finite differences of the hypernetwork's output; the
// embeddings of the clients (of clients in all) outside the round must not move. It leaves
// net at φ before the update.
func checkServerUpdate(t *testing.T, net *hyper.Net, rec *recording, clients int) {
	t.Helper()
	keep := cuda.NewScope()
	defer keep.Close()
	rows := cuda.FromSlice(keep, cuda.CPU, rec.rows)
	generate := func() [][]float64 {
		s := cuda.NewScope()
		defer s.Close()
		s.SetGradEnabled(false)
		var out [][]float64
		for _, x := range net.Generate(s, rows) {
			v, _ := x.Float64s()
			out = append(out, v)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	set := func(p *cuda.Tensor, v []float64) {
		s := cuda.NewScope()
		defer s.Close()
		s.SetGradEnabled(false)
		s.CopyFrom(p, cuda.FromSlice(s, cuda.CPU, v, p.Shape()...))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range net.Params() { // back to φ before the update
		set(p, rec.before[i])
	}
	// the generation at φ is what the clients started from
	for i, g := range generate() {
		for e := range g {
			if g[e] != rec.generated[i][e] {
				t.Fatalf("regenerated %s[%d] = %g, the round's %g", net.Targets[i].Name, e, g[e], rec.generated[i][e])
			}
		}
	}
	const eps = 1e-6
	checked, moved := 0, 0
	for pi, p := range net.Params() {
		v := slices.Clone(rec.before[pi])
		for j := range v {
			orig := v[j]
			v[j] = orig + eps
			set(p, v)
			plus := generate()
			v[j] = orig - eps
			set(p, v)
			minus := generate()
			v[j] = orig
			set(p, v)
			var sum float64
			for ti := range plus {
				per := len(plus[ti]) / len(rec.rows)
				for e := range plus[ti] {
					col := (plus[ti][e] - minus[ti][e]) / (2 * eps)
					sum += rec.weights[e/per] * col * (rec.generated[ti][e] - rec.trained[ti][e])
				}
			}
			got := rec.before[pi][j] - rec.after[pi][j] // β = 1: the update is the gradient
			if math.Abs(got-sum) > 1e-6*(1+math.Abs(sum)) {
				t.Fatalf("%s[%d]: server update %.10g, Σ (m_i/M) J_iᵀ ΔW_i %.10g", net.Names()[pi], j, got, sum)
			}
			if got != 0 {
				moved++
			}
			checked++
		}
	}
	if int64(checked) != net.Count() || moved == 0 {
		t.Fatalf("checked %d of %d elements, %d moved", checked, net.Count(), moved)
	}
	e := int(net.Cfg.Embed)
	for c := 0; c < clients; c++ {
		if slices.Contains(rec.rows, int64(c)) {
			continue
		}
		if !slices.Equal(rec.before[0][c*e:(c+1)*e], rec.after[0][c*e:(c+1)*e]) {
			t.Errorf("client %d is not in the round but its embedding moved", c)
		}
	}
}
