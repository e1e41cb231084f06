package fl_test

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
)

// Accuracy checks on real data: every baseline beats chance on Fashion-MNIST, and Local
// beats FedAvg under the pathological split.

func runFashion(t *testing.T, sp *data.Split, pc data.PartitionConfig, strat fl.Strategy, bn bool, perRound int) fltest.FashionResult {
	t.Helper()
	st := fltest.NewSetup(t, sp, pc)
	// FedTP's local optimizer: SGD, lr 0.01, momentum 0.9 (lr 0.05 diverged under the
	// pathological split, and the run stopped with the NaN error as it should)
	cfg := fl.Config{Rounds: 8, PerRound: perRound, Epochs: 2, Batch: 32, LR: 0.01, Momentum: 0.9, Seed: 1, Device: cuda.CPU}
	r, err := fl.New(cfg, strat, st.Fed, st.Train, st.Test, fltest.Convnet(28, 1, 10, bn))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Train()
	if err != nil {
		t.Fatal(err)
	}
	res := fltest.FashionResult{EvalResult: *h[len(h)-1].Eval, Blind: fltest.BlindAccuracy(st.Fed)}
	t.Logf("%s: micro accuracy %.3f over %d test images (blind %.3f), per-client mean %.3f ± %.3f, last train loss %.3f",
		strat.Name(), res.Micro, res.N(), res.Blind, res.Mean, res.Std, h[len(h)-1].TrainLoss)
	return res
}

// TestEveryBaselineBeatsChanceOnFashionMNIST: every algorithm's personalized models beat
// the best image-blind predictor (blindAccuracy) by a clear margin: if a model were no
// better than blind, its accuracy measured on n test images would exceed the blind level
// by more than z = 4 binomial standard errors with probability below 4e-5 (one-sided
// normal tail), so passing shows that each learned from the images. The numbers involved:
// n = 1000 and blind = 0.375 under this Dirichlet(0.5) split, so the floor is 0.375 +
// 4·0.015 ≈ 0.44 (the algorithms reach 0.57 to 0.80).
func TestEveryBaselineBeatsChanceOnFashionMNIST(t *testing.T) {
	sp := fltest.Fashion(t, 3000, 1000)
	pc := data.PartitionConfig{Method: data.MethodDirichlet, Clients: 10, Alpha: 0.5, Seed: 1}
	// Half of the clients train each round, but FedBN trains every client, as in its paper
	// (all clients every round). Its evaluation pairs each client's BatchNorm running
	// statistics, gathered under the client's own weights, with the newly averaged ones; at
	// half participation, 8 rounds in, that pairing is fragile: the final accuracy was 0.64,
	// 0.68 and 0.69 for three seeds, and 0.27 for the first seed when its products were merely
	// rounded differently (two intra-op threads instead of one; the round before: 0.63). With
	// every client it reached 0.79 for seeds 1 and 2, and 0.82 for seed 1 at two threads.
	for _, c := range []struct {
		s        fl.Strategy
		bn       bool
		perRound int
	}{{algo.FedAvg(), false, 5}, {algo.FedProx{Mu: 0.01}, false, 5}, {algo.Local(), false, 5}, {algo.FedPer(), false, 5}, {algo.FedBN(), true, 10},
		{algo.FedRep{FedRepConfig: algo.FedRepConfig{RepEpochs: 1}}, false, 5}, {algo.FedBABU{FedBABUConfig: algo.FedBABUConfig{FineTuneEpochs: 1, FineTuneSteps: 1}}, false, 5}, {&algo.FedRoD{}, false, 5}} {
		res := runFashion(t, sp, pc, c.s, c.bn, c.perRound)
		const z = 4
		if floor := res.Blind + z*fltest.StdErr(res.Blind, res.N()); !(res.Micro > floor) {
			t.Errorf("%s: accuracy %.3f, not clearly above the blind %.3f (floor %.3f = blind + %d standard errors over %d images)",
				c.s.Name(), res.Micro, res.Blind, floor, z, res.N())
		}
	}
}

// TestLocalBeatsFedAvgUnderPathologicalSplit: with two classes per client a local model
// only has to tell two classes apart, while the averaged model must serve all ten (the
// papers' observation about pathological splits). Both are measured on the same n test
// images; the difference of two accuracies has a standard error of at most
// √((p₁(1−p₁) + p₂(1−p₂))/n) (less, as the two are paired), so local must lead by z = 4 of
// those for the lead to be real rather than sampling luck.
func TestLocalBeatsFedAvgUnderPathologicalSplit(t *testing.T) {
	sp := fltest.Fashion(t, 3000, 1000)
	pc := data.PartitionConfig{Method: data.MethodPathological, Clients: 10, ClassesPerClient: 2, Seed: 1}
	local := runFashion(t, sp, pc, algo.Local(), false, 5)
	avg := runFashion(t, sp, pc, algo.FedAvg(), false, 5)
	const z = 4
	se := math.Hypot(fltest.StdErr(local.Micro, local.N()), fltest.StdErr(avg.Micro, avg.N()))
	if !(local.Micro > avg.Micro+z*se) {
		t.Fatalf("local %.3f does not beat fedavg %.3f by %d standard errors (%.3f)", local.Micro, avg.Micro, z, z*se)
	}
}
