package fl

import (
	"testing"

	"pfl/cuda"
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
		strat            Strategy
		stored, personal int64
		passes           float64
	}{
		{FedAvg(), n, 0, 1},
		{FedPer(), n, head, 1},
		{&Ditto{DittoConfig: DittoConfig{Lambda: 1}}, 2 * n, n, 2},
		{&APFL{APFLConfig: APFLConfig{Alpha: 0.25}}, 2*n + 1, n + 1, 2},
		{&PFedMe{PFedMeConfig: PFedMeConfig{Lambda: 15, InnerSteps: 5, Beta: 1}}, 2 * n, n, 5},
	} {
		t.Run(c.strat.Name(), func(t *testing.T) {
			m, err := build(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if wrap := hooksOf(c.strat).prep.Wrap; wrap != nil {
				if m, err = wrap(m, Wrapping{Build: build}); err != nil {
					t.Fatal(err)
				}
			}
			defer m.Close()
			personal := make([]bool, len(m.Params().List))
			for i, p := range m.Params().List {
				personal[i] = c.strat.Personal(p)
			}
			got := countResources(m, hooksOf(c.strat).passes(), personal)
			if got.StoredParams != c.stored || got.PersonalParams != c.personal || got.UpParams != c.stored-c.personal ||
				got.DownParams != got.UpParams || got.TrainFLOPs != 6*macs*c.passes {
				t.Fatalf("%+v, want stored %d, personal %d, %g passes of %g MACs", got, c.stored, c.personal, c.passes, macs)
			}
		})
	}
}
