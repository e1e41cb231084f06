package smoke

import (
	"strings"
	"testing"

	"pfl/cuda"
)

func TestSmokeLearnsAndLeaksNothing(t *testing.T) {
	res, err := Run(Config{Steps: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	// Four well-separated classes in 16 dimensions: a trained MLP is far above chance (0.25).
	if res.TestAccuracy < 0.9 {
		t.Errorf("held-out accuracy %.3f, want >= 0.9", res.TestAccuracy)
	}
	if !(res.FinalLoss < res.FirstLoss/2) {
		t.Errorf("loss %.3f -> %.3f did not halve", res.FirstLoss, res.FinalLoss)
	}
	if res.LeakedTensors != 0 {
		t.Errorf("%d tensors leaked", res.LeakedTensors)
	}
}

func TestSmokeRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Classes: 1}, "classes"},
		{Config{Steps: -3}, "steps"},
		{Config{LR: -1}, "lr"},
		{Config{Train: -5}, "train"},
	} {
		if _, err := Run(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

func TestSmokeIsDeterministic(t *testing.T) {
	a, err := Run(Config{Steps: 20, Seed: 5, Device: cuda.CPU})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(Config{Steps: 20, Seed: 5})
	if a.FinalLoss != b.FinalLoss || a.TestAccuracy != b.TestAccuracy {
		t.Fatalf("same seed, different runs: %+v vs %+v", a, b)
	}
}
