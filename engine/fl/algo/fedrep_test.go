package algo

import (
	"testing"

	"pfl/cuda"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// TestFedRepPhases: of E local epochs, E − RepEpochs train the head alone, then RepEpochs
// the body alone (Collins et al.'s LocalUpdate.train: head_eps = local_ep − local_rep_ep),
// at the official defaults (5, 1), its CIFAR-10 script (11, 1) and its other scripts (15, 5).
func TestFedRepPhases(t *testing.T) {
	vit, err := model.Build(fltest.VitSpec(8, 1, 4, 8, nil), 1, cuda.CPU, cuda.Float32, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer vit.Close()
	for _, c := range []struct{ epochs, rep, head int }{{5, 1, 4}, {11, 1, 10}, {15, 5, 10}, {2, 1, 1}} {
		phases := FedRep{FedRepConfig{RepEpochs: c.rep}}.Phases(c.epochs)
		if len(phases) != 2 || phases[0].Epochs != c.head || phases[1].Epochs != c.rep || phases[0].Steps != 0 || phases[1].Steps != 0 {
			t.Fatalf("epochs %d, rep_epochs %d: phases %+v, want %d head epochs then %d body epochs", c.epochs, c.rep, phases, c.head, c.rep)
		}
		for _, p := range vit.Params().List {
			isHead := p.Role == model.RoleHead
			if phases[0].Train(p) != isHead || phases[1].Train(p) == isHead {
				t.Errorf("%s (%s): head phase trains it %v, body phase %v", p.Name, p.Role, phases[0].Train(p), phases[1].Train(p))
			}
		}
	}
}
