package fltest

import (
	"math"
	"testing"

	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/internal/testenv"
)

// Accuracy checks on real data need a small slice of Fashion-MNIST and the level a
// predictor that never looks at the images reaches.

// Fashion loads a small slice of Fashion-MNIST (skips when it is not installed).
func Fashion(t testing.TB, nTrain, nTest int) *data.Split {
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

// FashionResult is a run's final evaluation and the blind accuracy of its clients' test
// splits.
type FashionResult struct {
	fl.EvalResult
	Blind float64 // BlindAccuracy of the partition
}

// N is the number of test predictions behind the micro accuracy.
func (r FashionResult) N() int { return Predictions(r.EvalResult) }

// BlindAccuracy is the best micro accuracy a predictor that never looks at the images can
// reach on fed's test splits, even one that knows every client's label counts: each client
// answers its most frequent test label, Σ_c max_k n_ck / Σ_c n_c. Under a label-skewed
// split it is far above 1/classes (a personalized model that learned only its client's
// label prior reaches it), so it, not 1/classes, is the chance level to beat.
func BlindAccuracy(fed *data.Federated) float64 {
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

// StdErr is the binomial standard error of an accuracy p measured on n predictions.
func StdErr(p float64, n int) float64 { return math.Sqrt(p * (1 - p) / float64(n)) }
