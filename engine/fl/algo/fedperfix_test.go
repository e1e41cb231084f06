package algo

import (
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// TestPartialFamilyShapesAndSplits: each partial-personalization algorithm adds its
// plug-in to a ViT that has none (with the official defaults, in every block), keeps a
// spec's own plug-in values, refuses a model that cannot take the plug-in, and keeps
// exactly its roles and blocks local.
func TestPartialFamilyShapesAndSplits(t *testing.T) {
	base := model.Spec{Preset: "tiny-vit", Depth: 3}
	cases := []struct {
		strat fl.Strategy
		check func(s model.Spec) bool
		local []model.Role
	}{
		{FedPerfix(fl.Options{}), func(s model.Spec) bool {
			return s.Prefix == model.PrefixConfig{Blocks: 3, Mid: 256, Scale: 1.5, Kind: model.PrefixAdapter}
		}, []model.Role{model.RoleAdapter, model.RoleHead}},
		{PrefixZ(fl.Options{}), func(s model.Spec) bool {
			return s.Prefix == model.PrefixConfig{Blocks: 3, Scale: 1.5, Kind: model.PrefixLinear, Init: model.PrefixInitZero}
		}, []model.Role{model.RoleAdapter, model.RoleHead}},
		{PrefixR(fl.Options{}), func(s model.Spec) bool {
			return s.Prefix == model.PrefixConfig{Blocks: 3, Scale: 1.5, Kind: model.PrefixLinear, Init: model.PrefixInitDefault}
		}, []model.Role{model.RoleAdapter, model.RoleHead}},
		{PromptsVariant(fl.Options{}), func(s model.Spec) bool { return s.Prompts == promptTokens },
			[]model.Role{model.RolePrompt, model.RoleHead}},
		{AdaptersVariant(fl.Options{}), func(s model.Spec) bool { return s.Adapter == model.MLPAdapterConfig{Mid: adapterMid, Scale: 1} },
			[]model.Role{model.RoleAdapter, model.RoleHead}},
	}
	for _, c := range cases {
		t.Run(c.strat.Name(), func(t *testing.T) {
			s, err := fl.Shape(c.strat, base)
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
			if _, err := fl.Shape(c.strat, model.Spec{Preset: "convnet"}); err == nil {
				t.Fatal("a ConvNet was given a ViT plug-in")
			}
		})
	}
	// a spec's own values win; the missing ones take the defaults
	s, err := fl.Shape(FedPerfix(fl.Options{}), model.Spec{Preset: "tiny-vit", Depth: 4, Prefix: model.PrefixConfig{Mid: 8}})
	if err != nil || s.Prefix != (model.PrefixConfig{Blocks: 4, Mid: 8, Scale: 1.5, Kind: model.PrefixAdapter}) {
		t.Fatalf("shaped prefix %+v (%v), want blocks 4, mid 8, scale 1.5", s.Prefix, err)
	}
	// the paper's tokens for Prefix-Z: concatenated, 10 of them; a contradicting kind or
	// init is refused
	s, err = fl.Shape(PrefixZ(fl.Options{}), model.Spec{Preset: "tiny-vit", Depth: 2, Prefix: model.PrefixConfig{Kind: model.PrefixTokens}})
	if err != nil || s.Prefix != (model.PrefixConfig{Blocks: 2, Scale: 1.5, Kind: model.PrefixTokens, Form: model.PrefixConcat,
		Init: model.PrefixInitZero, Length: prefixTokens}) {
		t.Fatalf("prefix-z with tokens: %+v (%v)", s.Prefix, err)
	}
	for _, bad := range []struct {
		strat fl.Strategy
		p     model.PrefixConfig
	}{{PrefixZ(fl.Options{}), model.PrefixConfig{Kind: model.PrefixAdapter}}, {PrefixR(fl.Options{}), model.PrefixConfig{Init: model.PrefixInitZero}},
		{FedPerfix(fl.Options{}), model.PrefixConfig{Kind: model.PrefixLinear}}} {
		if _, err := fl.Shape(bad.strat, model.Spec{Preset: "tiny-vit", Prefix: bad.p}); err == nil {
			t.Errorf("%s took prefix %+v", bad.strat.Name(), bad.p)
		}
	}
	// configured local parts replace the defaults; a block keeps every parameter of it
	p := FedPerfix(fl.Options{LocalRoles: []model.Role{model.RoleHead}, LocalBlocks: []int{2}}).(Partial)
	for _, param := range []*model.Param{{Role: model.RoleAdapter, Block: 0}, {Role: model.RoleMLP, Block: 2},
		{Role: model.RoleNorm, Block: -1}, {Role: model.RoleHead, Block: -1}} {
		want := param.Block == 2 || param.Role == model.RoleHead
		if p.Personal(param) != want {
			t.Errorf("%v in block %d: personal=%v, want %v", param.Role, param.Block, !want, want)
		}
	}
}

// TestPartialFamilyStackedEqualsSequential: FedPerfix, prompts and adapters on a tiny ViT
// give the same global model, client stores and losses stacked and one client at a time,
// under both evaluation protocols.
func TestPartialFamilyStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	none := 0.0
	for _, c := range []struct {
		mk   func(fl.Options) fl.Strategy
		plug func(*model.Spec)
	}{
		{FedPerfix, func(s *model.Spec) { s.Prefix.Mid = 6 }},
		{PrefixR, func(*model.Spec) {}},
		{PromptsVariant, func(s *model.Spec) { s.Prompts = 2 }},
		{AdaptersVariant, func(s *model.Spec) { s.Adapter.Mid = 5 }},
	} {
		strat := func() fl.Strategy { return c.mk(fl.Options{LocalBlocks: []int{1}}) }
		t.Run(strat().Name(), func(t *testing.T) {
			spec := fltest.VitSpec(16, 2, 8, 24, &none)
			c.plug(&spec)
			spec, err := fl.Shape(strat(), spec)
			if err != nil {
				t.Fatal(err)
			}
			vit := func(k int, g *cuda.Generator) (model.Model, error) {
				return model.Build(spec, k, cuda.CPU, cuda.Float64, g)
			}
			for _, protocol := range []fl.EvalProtocol{fl.EvalFedTP, fl.EvalFedPerfix} {
				cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Seed: 5, Device: cuda.CPU,
					DType: cuda.Float64, EvalEvery: 1, Protocol: protocol}
				fltest.StackedEqualsSequential(t, st, cfg, strat, vit)
			}
		})
	}
}
