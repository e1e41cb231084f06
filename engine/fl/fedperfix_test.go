package fl

import (
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// TestPartialFamilyShapesAndSplits: each partial-personalization algorithm adds its
// plug-in to a ViT that has none (with the official defaults, in every block), keeps a
// spec's own plug-in values, refuses a model that cannot take the plug-in, and keeps
// exactly its roles and blocks local.
func TestPartialFamilyShapesAndSplits(t *testing.T) {
	base := model.Spec{Preset: "tiny-vit", Depth: 3}
	cases := []struct {
		strat Strategy
		check func(s model.Spec) bool
		local []model.Role
	}{
		{FedPerfix(Options{}), func(s model.Spec) bool {
			return s.Prefix == model.PrefixConfig{Blocks: 3, Mid: 256, Scale: 1.5, Kind: model.PrefixAdapter}
		}, []model.Role{model.RoleAdapter, model.RoleHead}},
		{PrefixZ(Options{}), func(s model.Spec) bool {
			return s.Prefix == model.PrefixConfig{Blocks: 3, Scale: 1.5, Kind: model.PrefixLinear, Init: model.PrefixInitZero}
		}, []model.Role{model.RoleAdapter, model.RoleHead}},
		{PrefixR(Options{}), func(s model.Spec) bool {
			return s.Prefix == model.PrefixConfig{Blocks: 3, Scale: 1.5, Kind: model.PrefixLinear, Init: model.PrefixInitDefault}
		}, []model.Role{model.RoleAdapter, model.RoleHead}},
		{PromptsVariant(Options{}), func(s model.Spec) bool { return s.Prompts == promptTokens },
			[]model.Role{model.RolePrompt, model.RoleHead}},
		{AdaptersVariant(Options{}), func(s model.Spec) bool { return s.Adapter == model.MLPAdapterConfig{Mid: adapterMid, Scale: 1} },
			[]model.Role{model.RoleAdapter, model.RoleHead}},
	}
	for _, c := range cases {
		t.Run(c.strat.Name(), func(t *testing.T) {
			s, err := Shape(c.strat, base)
			if err != nil || !c.check(s) {
				t.Fatalf("shaped %+v (%v)", s, err)
			}
			m, err := model.Build(s, 1, cuda.CPU, cuda.Float32, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			plugIn := false
			for _, p := range m.Params().List {
				want := slices.Contains(c.local, p.Role)
				plugIn = plugIn || (want && p.Role != model.RoleHead)
				if got := c.strat.Personal(p); got != want {
					t.Errorf("%s personal=%v, want %v", p.Name, got, want)
				}
			}
			if !plugIn {
				t.Fatal("the shaped model has no plug-in parameter")
			}
			if _, err := Shape(c.strat, model.Spec{Preset: "convnet"}); err == nil {
				t.Fatal("a ConvNet was given a ViT plug-in")
			}
		})
	}
	// a spec's own values win; the missing ones take the defaults
	s, err := Shape(FedPerfix(Options{}), model.Spec{Preset: "tiny-vit", Depth: 4, Prefix: model.PrefixConfig{Mid: 8}})
	if err != nil || s.Prefix != (model.PrefixConfig{Blocks: 4, Mid: 8, Scale: 1.5, Kind: model.PrefixAdapter}) {
		t.Fatalf("shaped prefix %+v (%v), want blocks 4, mid 8, scale 1.5", s.Prefix, err)
	}
	// the paper's tokens for Prefix-Z: concatenated, 10 of them; a contradicting kind or
	// init is refused
	s, err = Shape(PrefixZ(Options{}), model.Spec{Preset: "tiny-vit", Depth: 2, Prefix: model.PrefixConfig{Kind: model.PrefixTokens}})
	if err != nil || s.Prefix != (model.PrefixConfig{Blocks: 2, Scale: 1.5, Kind: model.PrefixTokens, Form: model.PrefixConcat,
		Init: model.PrefixInitZero, Length: prefixTokens}) {
		t.Fatalf("prefix-z with tokens: %+v (%v)", s.Prefix, err)
	}
	for _, bad := range []struct {
		strat Strategy
		p     model.PrefixConfig
	}{{PrefixZ(Options{}), model.PrefixConfig{Kind: model.PrefixAdapter}}, {PrefixR(Options{}), model.PrefixConfig{Init: model.PrefixInitZero}},
		{FedPerfix(Options{}), model.PrefixConfig{Kind: model.PrefixLinear}}} {
		if _, err := Shape(bad.strat, model.Spec{Preset: "tiny-vit", Prefix: bad.p}); err == nil {
			t.Errorf("%s took prefix %+v", bad.strat.Name(), bad.p)
		}
	}
	// configured local parts replace the defaults; a block keeps every parameter of it
	p := FedPerfix(Options{LocalRoles: []model.Role{model.RoleHead}, LocalBlocks: []int{2}}).(Partial)
	for _, param := range []*model.Param{{Role: model.RoleAdapter, Block: 0}, {Role: model.RoleMLP, Block: 2},
		{Role: model.RoleNorm, Block: -1}, {Role: model.RoleHead, Block: -1}} {
		want := param.Block == 2 || param.Role == model.RoleHead
		if p.Personal(param) != want {
			t.Errorf("%v in block %d: personal=%v, want %v", param.Role, param.Block, !want, want)
		}
	}
}

// TestFedPerfixResourcesOnViTS16: on ViT-S/16 at 100 classes with FedPerfix's official
// CIFAR-100 preset (prefix adapters of width 256 in all 12 blocks; adapters, head and the
// whole of block 11 local) the counts are the hand counts: adapters 12 × (384·256 + 256 +
// 256·768 + 768) = 3,551,232; block 11 12·384 + 384·1152 + 1152 + 384·384 + 384 +
// 384·1536 + 1536 + 1536·384 + 384 = 1,774,464; head 384·100 + 100 = 38,500; local
// 5,364,196 of 25,255,396; one client sends and receives the other 19,891,200 per round.
func TestFedPerfixResourcesOnViTS16(t *testing.T) {
	strat := FedPerfix(Options{LocalBlocks: []int{11}})
	s, err := Shape(strat, model.Spec{Preset: "vit-s16", Classes: 100})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(s, 1, cuda.CPU, cuda.Float32, nil) // shapes only
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	personal := make([]bool, len(m.Params().List))
	for i, p := range m.Params().List {
		personal[i] = strat.Personal(p)
	}
	got := countResources(m, 1, personal)
	want := Resources{StoredParams: 25_255_396, PersonalParams: 5_364_196, UpParams: 19_891_200, DownParams: 19_891_200,
		ForwardMACs: m.MACs(), TrainFLOPs: 6 * m.MACs()}
	if got != want {
		t.Fatalf("resources %+v, want %+v", got, want)
	}
}

// TestPartialFamilyStackedEqualsSequential: FedPerfix, prompts and adapters on a tiny ViT
// give the same global model, client stores and losses stacked and one client at a time,
// under both evaluation protocols.
func TestPartialFamilyStackedEqualsSequential(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	none := 0.0
	for _, c := range []struct {
		mk   func(Options) Strategy
		plug func(*model.Spec)
	}{
		{FedPerfix, func(s *model.Spec) { s.Prefix.Mid = 6 }},
		{PrefixR, func(*model.Spec) {}},
		{PromptsVariant, func(s *model.Spec) { s.Prompts = 2 }},
		{AdaptersVariant, func(s *model.Spec) { s.Adapter.Mid = 5 }},
	} {
		strat := func() Strategy { return c.mk(Options{LocalBlocks: []int{1}}) }
		t.Run(strat().Name(), func(t *testing.T) {
			spec := vitSpec(16, 2, 8, 24, &none)
			c.plug(&spec)
			spec, err := Shape(strat(), spec)
			if err != nil {
				t.Fatal(err)
			}
			vit := func(k int, g *cuda.Generator) (model.Model, error) {
				return model.Build(spec, k, cuda.CPU, cuda.Float64, g)
			}
			for _, protocol := range []EvalProtocol{EvalFedTP, EvalFedPerfix} {
				cfg := Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Seed: 5, Device: cuda.CPU,
					DType: cuda.Float64, EvalEvery: 1, Protocol: protocol}
				checkStackedEqualsSequential(t, st, cfg, strat, vit)
			}
		})
	}
}

// TestFedPerfixProtocolEvaluatesBeforeAggregation: under the fedperfix protocol every
// client is evaluated before the server update, as FedPerfix's official code tests every
// client before aggregate_parameters: a trained client with its trained model (as it was
// before the server averaged it), every other client with the global shared part the round
// started from, i.e. the previous round's (the initial one in round 0), and its own
// personal part. Under fedtp every client sees the new global part, so the two protocols
// differ in round 1 for the trained clients and for the others.
func TestFedPerfixProtocolEvaluatesBeforeAggregation(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 6, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := func(protocol EvalProtocol) Config {
		return Config{Rounds: 2, PerRound: 2, Epochs: 2, Batch: 8, LR: 0.1, Seed: 5, Device: cuda.CPU, DType: cuda.Float64,
			EvalEvery: 1, Protocol: protocol}
	}
	build := convnetAs(16, 1, 4, false, cuda.Float64)
	history := map[EvalProtocol][]RoundMetrics{}
	for _, protocol := range []EvalProtocol{EvalFedTP, EvalFedPerfix} {
		r, err := New(cfg(protocol), FedPer(), st.fed, st.train, st.test, build)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if history[protocol], err = r.Train(); err != nil {
			t.Fatal(err)
		}
	}
	fedtp, fedperfix := history[EvalFedTP], history[EvalFedPerfix]
	if !slices.Equal(fedtp[1].Clients, fedperfix[1].Clients) {
		t.Fatalf("the protocols sampled %v and %v", fedtp[1].Clients, fedperfix[1].Clients)
	}

	// the references: the initial models (round 0's global part), and round 0's trained
	// clients' trained rows, rebuilt by training again from the same start (same streams)
	// without aggregating
	again, err := New(cfg(EvalFedPerfix), FedPer(), st.fed, st.train, st.test, build)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	initial, err := again.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	s := cuda.NewScope()
	defer s.Close()
	var met RoundMetrics
	trained0 := fedperfix[0].Clients
	if _, _, err := again.localTrain(s, again.stacked, trained0, nil, 0, &met); err != nil {
		t.Fatal(err)
	}
	e, err := again.evalModelRows(trained0)
	if err != nil {
		t.Fatal(err)
	}

	same := func(a, b EvalResult, c int) bool { return a.Correct[c] == b.Correct[c] && a.Loss[c] == b.Loss[c] }
	for c := range initial.Correct {
		got0, got1 := *fedperfix[0].Eval, *fedperfix[1].Eval
		if i := slices.Index(trained0, c); i >= 0 {
			if got0.Correct[c] != int(e.correct[i]) || got0.Loss[c] != e.loss[i]/e.count[i] {
				t.Errorf("round 0, trained client %d: %d correct (loss %g) under fedperfix, its trained model gets %g (%g)",
					c, got0.Correct[c], got0.Loss[c], e.correct[i], e.loss[i]/e.count[i])
			}
		} else if !same(got0, initial, c) {
			t.Errorf("round 0, client %d (not trained): %d correct (loss %g), the initial model gets %d (%g)",
				c, got0.Correct[c], got0.Loss[c], initial.Correct[c], initial.Loss[c])
		}
		// round 1: a client that did not train keeps its personal part, and sees round 0's
		// global part: fedtp's round-0 evaluation of it
		if !slices.Contains(fedperfix[1].Clients, c) && !same(got1, *fedtp[0].Eval, c) {
			t.Errorf("round 1, client %d (not trained): %d correct (loss %g), with round 0's global part %d (%g)",
				c, got1.Correct[c], got1.Loss[c], fedtp[0].Eval.Correct[c], fedtp[0].Eval.Loss[c])
		}
	}
	// the test can tell the protocols apart: in round 1 they differ for a trained client and
	// for a client that did not train
	differ := map[bool]bool{}
	for c := range initial.Correct {
		trained := slices.Contains(fedperfix[1].Clients, c)
		differ[trained] = differ[trained] || !same(*fedtp[1].Eval, *fedperfix[1].Eval, c)
	}
	if !differ[true] || !differ[false] {
		t.Errorf("round 1's results differ between the protocols for trained clients: %v, for the others: %v; want both", differ[true], differ[false])
	}
}

// evalModelRows evaluates the stacked model's rows as they are (row i: client ids[i]).
func (r *Run) evalModelRows(ids []int) (evalCounts, error) {
	s := cuda.NewScope()
	defer s.Close()
	return r.evalModel(s, r.stacked, ids)
}
