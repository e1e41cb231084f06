package fl_test

import (
	"context"
	"errors"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// TestNewStopsBetweenModels: a context ended while the run builds its models stops the
// construction before the next model, with the context's error, freeing every model built
// so far; with client groups the groups' models are checked too.
func TestNewStopsBetweenModels(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 3})
	for _, after := range []int{1, 3, 4} { // the global model; the evaluation chunk; a group's
		live := cuda.LiveTensors()
		ctx, cancel := context.WithCancel(context.Background())
		builds := 0
		build := func(k int, g *cuda.Generator) (model.Model, error) {
			builds++
			if builds == after {
				cancel() // a signal while this model is built
			}
			return model.Build(fltest.VitSpec(16, 2, 8, 32, nil), k, cuda.CPU, cuda.Float32, g)
		}
		r, err := fl.NewContext(ctx, fl.Config{Rounds: 1, PerRound: 3, Batch: 8, LR: 0.05, Seed: 5, Device: cuda.CPU, Workers: 2}, algo.FedAvg(), st.Fed, st.Train, st.Test, build)
		if !errors.Is(err, context.Canceled) || r != nil {
			t.Fatalf("cancelled in build %d: run %v, error %v; want context.Canceled", after, r, err)
		}
		if builds != after {
			t.Fatalf("cancelled in build %d: %d models built, want none after it", after, builds)
		}
		if got := cuda.LiveTensors(); got != live {
			t.Fatalf("cancelled in build %d: %d tensors left, want %d (every model freed)", after, got, live)
		}
		cancel()
	}
}
