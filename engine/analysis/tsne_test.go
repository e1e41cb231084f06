package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// clusters draws k Gaussian clusters of m points each in d dimensions, unit spread,
// centres 10 apart on the axes.
func clusters(k, m, d int, seed uint64) ([]float64, []int) {
	r := rand.New(rand.NewPCG(seed, 1))
	var x []float64
	var labels []int
	for c := 0; c < k; c++ {
		for i := 0; i < m; i++ {
			for j := 0; j < d; j++ {
				v := r.NormFloat64()
				if j == c {
					v += 10
				}
				x = append(x, v)
			}
			labels = append(labels, c)
		}
	}
	return x, labels
}

// TestTSNESeparatesClusters: four well-separated clusters stay separated in the plane (every
// point's 5 nearest neighbours in its own cluster), and a fixed seed gives the same layout.
func TestTSNESeparatesClusters(t *testing.T) {
	x, labels := clusters(4, 20, 8, 3)
	n := len(labels)
	if p := KNNPurity(x, n, 8, labels, 5); p != 1 {
		t.Fatalf("the input's own purity %v", p)
	}
	y, err := TSNE(x, n, 8, TSNEOptions{Perplexity: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p := KNNPurity(y, n, 2, labels, 5); p < 0.99 {
		t.Fatalf("5-NN purity in the plane %v", p)
	}
	again, _ := TSNE(x, n, 8, TSNEOptions{Perplexity: 10, Seed: 1})
	if !slices.Equal(y, again) {
		t.Fatal("the same seed gave another layout")
	}
	// shuffled labels are impure: the check can fail
	mixed := slices.Clone(labels)
	rand.New(rand.NewPCG(9, 9)).Shuffle(n, func(a, b int) { mixed[a], mixed[b] = mixed[b], mixed[a] })
	if p := KNNPurity(y, n, 2, mixed, 5); p > 0.5 {
		t.Fatalf("purity of shuffled labels %v", p)
	}
	if _, err := TSNE([]float64{1, math.NaN()}, 2, 1, TSNEOptions{}); err == nil {
		t.Fatal("a NaN embedded")
	}
}

// TestAffinities: each conditional row has the asked perplexity, and P is a symmetric
// distribution.
func TestAffinities(t *testing.T) {
	x, _ := clusters(3, 10, 4, 5)
	n := 30
	const perp = 7
	p := Affinities(x, n, 4, perp)
	var total float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			total += p[i*n+j]
			if math.Abs(p[i*n+j]-p[j*n+i]) > 1e-18 {
				t.Fatalf("P not symmetric at %d, %d", i, j)
			}
		}
	}
	if math.Abs(total-1) > 1e-9 {
		t.Fatalf("P sums to %v", total)
	}
	cond := conditionals(x, n, 4, perp)
	for i := 0; i < n; i++ {
		var h, sum float64
		for j, v := range cond[i*n : (i+1)*n] {
			if j == i && v != 0 {
				t.Fatalf("p(%d|%d) = %v", i, i, v)
			}
			if v > 0 {
				h -= v * math.Log(v)
			}
			sum += v
		}
		if math.Abs(sum-1) > 1e-12 || math.Abs(math.Exp(h)-perp) > 1e-3 {
			t.Fatalf("row %d: sums to %v, perplexity %v", i, sum, math.Exp(h))
		}
	}
}
