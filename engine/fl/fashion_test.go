package fl

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/internal/testenv"
)

// Accuracy checks on real data: every baseline beats chance on Fashion-MNIST, and Local
// beats FedAvg under the pathological split.

// fashion loads a small slice of Fashion-MNIST (skips when it is not installed).
func fashion(t *testing.T, nTrain, nTest int) *data.Split {
	testenv.RequireData(t, data.FashionMNISTDir, "apt-get install dataset-fashion-mnist")
	sp, err := data.FashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	cut := func(x *data.Images, n int) *data.Images {
		y := *x
		y.N, y.Pixels, y.Labels = n, x.Pixels[:n*x.C*x.H*x.W], x.Labels[:n]
		return &y
	}
	return &data.Split{Train: cut(sp.Train, nTrain), Test: cut(sp.Test, nTest)}
}

// fashionResult is a run's final evaluation and the blind accuracy of its clients' test
// splits.
type fashionResult struct {
	EvalResult
	Blind float64 // blindAccuracy of the partition
}

func runFashion(t *testing.T, sp *data.Split, pc data.PartitionConfig, strat Strategy, bn bool, perRound int) fashionResult {
	t.Helper()
	st := newSetup(t, sp, pc)
	// FedTP's local optimizer: SGD, lr 0.01, momentum 0.9 (lr 0.05 diverged under the
	// pathological split, and the run stopped with the NaN error as it should)
	cfg := Config{Rounds: 8, PerRound: perRound, Epochs: 2, Batch: 32, LR: 0.01, Momentum: 0.9, Seed: 1, Device: cuda.CPU}
	r, err := New(cfg, strat, st.fed, st.train, st.test, convnet(28, 1, 10, bn))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Train()
	if err != nil {
		t.Fatal(err)
	}
	res := fashionResult{*h[len(h)-1].Eval, blindAccuracy(st.fed)}
	t.Logf("%s: micro accuracy %.3f over %d test images (blind %.3f), per-client mean %.3f ± %.3f, last train loss %.3f",
		strat.Name(), res.Micro, res.n(), res.Blind, res.Mean, res.Std, h[len(h)-1].TrainLoss)
	return res
}

// blindAccuracy is the best micro accuracy a predictor that never looks at the images can
// reach on fed's test splits, even one that knows every client's label counts: each client
// answers its most frequent test label, Σ_c max_k n_ck / Σ_c n_c. Under a label-skewed
// split it is far above 1/classes (a personalized model that learned only its client's
// label prior reaches it), so it, not 1/classes, is the chance level to beat.
func blindAccuracy(fed *data.Federated) float64 {
	best, all := 0, 0
	for _, idx := range fed.Part.Test {
		count := map[int]int{}
		top := 0
		for _, i := range idx {
			l := int(fed.Test.Labels[i])
			count[l]++
			top = max(top, count[l])
		}
		best += top
		all += len(idx)
	}
	return float64(best) / float64(all)
}

// stdErr is the binomial standard error of an accuracy p measured on n predictions.
func stdErr(p float64, n int) float64 { return math.Sqrt(p * (1 - p) / float64(n)) }

// TestEveryBaselineBeatsChanceOnFashionMNIST: every algorithm's personalized models beat
// the best image-blind predictor (blindAccuracy) by a clear margin: if a model were no
// better than blind, its accuracy measured on n test images would exceed the blind level
// by more than z = 4 binomial standard errors with probability below 4e-5 (one-sided
// normal tail), so passing shows that each learned from the images. The numbers involved:
// n = 1000 and blind = 0.375 under this Dirichlet(0.5) split, so the floor is 0.375 +
// 4·0.015 ≈ 0.44 (the algorithms reach 0.57 to 0.80).
func TestEveryBaselineBeatsChanceOnFashionMNIST(t *testing.T) {
	sp := fashion(t, 3000, 1000)
	pc := data.PartitionConfig{Method: data.MethodDirichlet, Clients: 10, Alpha: 0.5, Seed: 1}
	// Half of the clients train each round, but FedBN trains every client, as in its paper
	// (all clients every round). Its evaluation pairs each client's BatchNorm running
	// statistics, gathered under the client's own weights, with the newly averaged ones; at
	// half participation, 8 rounds in, that pairing is fragile: the final accuracy was 0.64,
	// 0.68 and 0.69 for three seeds, and 0.27 for the first seed when its products were merely
	// rounded differently (two intra-op threads instead of one; the round before: 0.63). With
	// every client it reached 0.79 for seeds 1 and 2, and 0.82 for seed 1 at two threads.
	for _, c := range []struct {
		s        Strategy
		bn       bool
		perRound int
	}{{FedAvg(), false, 5}, {FedProx{Mu: 0.01}, false, 5}, {Local(), false, 5}, {FedPer(), false, 5}, {FedBN(), true, 10},
		{FedRep{FedRepConfig{RepEpochs: 1}}, false, 5}, {FedBABU{FedBABUConfig{FineTuneEpochs: 1, FineTuneSteps: 1}}, false, 5}, {&FedRoD{}, false, 5}} {
		res := runFashion(t, sp, pc, c.s, c.bn, c.perRound)
		const z = 4
		if floor := res.Blind + z*stdErr(res.Blind, res.n()); !(res.Micro > floor) {
			t.Errorf("%s: accuracy %.3f, not clearly above the blind %.3f (floor %.3f = blind + %d standard errors over %d images)",
				c.s.Name(), res.Micro, res.Blind, floor, z, res.n())
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
	sp := fashion(t, 3000, 1000)
	pc := data.PartitionConfig{Method: data.MethodPathological, Clients: 10, ClassesPerClient: 2, Seed: 1}
	local := runFashion(t, sp, pc, Local(), false, 5)
	avg := runFashion(t, sp, pc, FedAvg(), false, 5)
	const z = 4
	se := math.Hypot(stdErr(local.Micro, local.n()), stdErr(avg.Micro, avg.n()))
	if !(local.Micro > avg.Micro+z*se) {
		t.Fatalf("local %.3f does not beat fedavg %.3f by %d standard errors (%.3f)", local.Micro, avg.Micro, z, z*se)
	}
}
