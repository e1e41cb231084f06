package fl_test

import (
	"testing"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/model"
)

// TestResourcesFollowRolesAndCopies: the per-client counts of a declared (unallocated)
// tiny ViT: FedAvg stores and sends everything; FedPer keeps the head; Ditto and APFL
// store a second, personal copy (APFL also its α) and train twice per sample; pFedMe
// trains once per inner step.
func TestResourcesFollowRolesAndCopies(t *testing.T) {
	spec := model.Spec{Preset: "tiny-vit", Depth: 2, Dim: 16, Heads: 2, HeadDim: 8, MLP: 16, Patch: 8, Classes: 10}
	build := func(k int, g *cuda.Generator) (model.Model, error) {
		return model.Build(spec, k, cuda.CPU, cuda.Float32, g)
	}
	base, err := build(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	var n, head int64
	for _, p := range base.Params().List {
		n += p.Numel()
		if p.Role == model.RoleHead {
			head += p.Numel()
		}
	}
	macs := base.MACs()
	for _, c := range []struct {
		strat            fl.Strategy
		stored, personal int64
		passes           float64
	}{
		{algo.FedAvg(), n, 0, 1},
		{algo.FedPer(), n, head, 1},
		{&algo.Ditto{DittoConfig: algo.DittoConfig{Lambda: 1}}, 2 * n, n, 2},
		{&algo.APFL{APFLConfig: algo.APFLConfig{Alpha: 0.25}}, 2*n + 1, n + 1, 2},
		{&algo.PFedMe{PFedMeConfig: algo.PFedMeConfig{Lambda: 15, InnerSteps: 5, Beta: 1}}, 2 * n, n, 5},
	} {
		t.Run(c.strat.Name(), func(t *testing.T) {
			m, err := build(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := c.strat.(fl.PrepareStage); ok && w.PrepareHooks().Wrap != nil {
				if m, err = w.PrepareHooks().Wrap(m, fl.Wrapping{Build: build}); err != nil {
					t.Fatal(err)
				}
			}
			defer m.Close()
			personal := make([]bool, len(m.Params().List))
			for i, p := range m.Params().List {
				personal[i] = c.strat.Personal(p)
			}
			got := fl.CountResources(m, fl.Passes(c.strat), personal)
			if got.StoredParams != c.stored || got.PersonalParams != c.personal || got.UpParams != c.stored-c.personal ||
				got.DownParams != got.UpParams || got.TrainFLOPs != 6*macs*c.passes {
				t.Fatalf("%+v, want stored %d, personal %d, %g passes of %g MACs", got, c.stored, c.personal, c.passes, macs)
			}
		})
	}
}
