package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pfl/engine/rng"
)

func testRand(seed uint64) *rand.Rand {
	return rng.New(rng.Key{Seed: seed, Purpose: "test", Round: -1, Client: -1})
}

// balancedLabels is n samples of classes labels, i mod classes.
func balancedLabels(n, classes int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i % classes)
	}
	return out
}

// checkCover fails unless parts use every index in [0, n) exactly once.
func checkCover(t *testing.T, parts [][]int, n int) {
	t.Helper()
	seen := make([]bool, n)
	total := 0
	for j, p := range parts {
		for _, i := range p {
			if i < 0 || i >= n || seen[i] {
				t.Fatalf("client %d: index %d out of range or used twice", j, i)
			}
			seen[i] = true
		}
		total += len(p)
	}
	if total != n {
		t.Fatalf("%d of %d samples assigned", total, n)
	}
}

// classSet lists the classes present in a client's samples.
func classSet(labels []int64, idx []int) []int64 {
	var out []int64
	for _, i := range idx {
		if !slices.Contains(out, labels[i]) {
			out = append(out, labels[i])
		}
	}
	slices.Sort(out)
	return out
}

// meanEntropy is the average label entropy (nats) over clients.
func meanEntropy(labels []int64, classes int, parts [][]int) float64 {
	var sum float64
	for _, p := range parts {
		counts := make([]float64, classes)
		for _, i := range p {
			counts[labels[i]]++
		}
		for _, c := range counts {
			if c > 0 {
				q := c / float64(len(p))
				sum -= q * math.Log(q)
			}
		}
	}
	return sum / float64(len(parts))
}

func TestIID(t *testing.T) {
	parts, err := IID(103, 10, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	checkCover(t, parts, 103)
	for _, p := range parts {
		if len(p) != 10 && len(p) != 11 {
			t.Fatalf("client size %d, want 10 or 11", len(p))
		}
	}
	if _, err := IID(5, 6, testRand(1)); err == nil {
		t.Fatal("6 clients for 5 samples accepted")
	}
}

func TestDirichlet(t *testing.T) {
	labels := balancedLabels(5000, 10)
	test := balancedLabels(1000, 10)
	entropy := map[float64]float64{}
	for _, alpha := range []float64{0.1, 0.5, 100} {
		parts, shares, err := Dirichlet(labels, 10, 20, DirichletConfig{Alpha: alpha, MinSize: 10}, test, 10, testRand(2))
		if err != nil {
			t.Fatalf("alpha %g: %v", alpha, err)
		}
		checkCover(t, parts, len(labels))
		for j, p := range parts {
			if len(p) < 10 {
				t.Fatalf("alpha %g: client %d has %d samples", alpha, j, len(p))
			}
		}
		// the test split follows the train shares: a class a client has no train samples of
		// gives it no test samples either
		tparts := shares.Split(test, testRand(3))
		checkCover(t, tparts, len(test))
		for j := range parts {
			trainClasses := classSet(labels, parts[j])
			for _, c := range classSet(test, tparts[j]) {
				if !slices.Contains(trainClasses, c) {
					t.Fatalf("alpha %g: client %d has test class %d but no train samples of it", alpha, j, c)
				}
			}
		}
		entropy[alpha] = meanEntropy(labels, 10, parts)
	}
	t.Logf("mean label entropy per client: %v (uniform: %.3f)", entropy, math.Log(10))
	if !(entropy[0.1] < entropy[0.5] && entropy[0.5] < entropy[100]) {
		t.Fatalf("entropy does not grow with alpha: %v", entropy)
	}
	if entropy[100] < 0.95*math.Log(10) {
		t.Fatalf("alpha 100 should be nearly uniform: %v", entropy[100])
	}
}

func TestDirichletGivesUpWithAClearError(t *testing.T) {
	// 500 clients, 30 samples each at minimum, alpha 0.3: other frameworks loop forever here
	labels := balancedLabels(16000, 10)
	_, _, err := Dirichlet(labels, 10, 500, DirichletConfig{Alpha: 0.3, MinSize: 30, MaxDraws: 5}, nil, 0, testRand(4))
	if err == nil || !strings.Contains(err.Error(), "after 5 draws") {
		t.Fatalf("error %v, want one saying it gave up after 5 draws", err)
	}
	for _, bad := range []DirichletConfig{{Alpha: 0}, {Alpha: -1}, {Alpha: math.Inf(1)}} {
		if _, _, err := Dirichlet(labels, 10, 5, bad, nil, 0, testRand(4)); err == nil || !strings.Contains(err.Error(), "alpha") {
			t.Errorf("alpha %g: %v", bad.Alpha, err)
		}
	}
	if _, _, err := Dirichlet(labels[:10], 10, 20, DirichletConfig{Alpha: 1}, nil, 0, testRand(4)); err == nil {
		t.Error("20 clients for 10 samples accepted")
	}
}

func TestPathological(t *testing.T) {
	for _, c := range []struct{ classes, clients, k int }{{10, 50, 2}, {100, 50, 10}, {10, 10, 3}} {
		labels := balancedLabels(100*c.classes, c.classes)
		parts, shares, err := Pathological(labels, c.classes, c.clients, c.k, testRand(5))
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		checkCover(t, parts, len(labels))
		for j, p := range parts {
			if got := len(classSet(labels, p)); got != c.k {
				t.Fatalf("%+v: client %d has %d classes, want %d", c, j, got, c.k)
			}
		}
		for k, row := range shares {
			var s float64
			for _, x := range row {
				s += x
			}
			if math.Abs(s-1) > 1e-9 {
				t.Fatalf("%+v: shares of class %d sum to %g", c, k, s)
			}
		}
	}
	labels := balancedLabels(1000, 10)
	for _, bad := range []struct{ clients, k int }{{50, 11}, {7, 2}, {50, 0}} {
		if _, _, err := Pathological(labels, 10, bad.clients, bad.k, testRand(5)); err == nil {
			t.Errorf("%d clients with %d classes each accepted", bad.clients, bad.k)
		}
	}
}

// cifar100Labels returns fine labels 0..99 (n per class) and coarse = fine/5.
func cifar100Labels(n int) (fine, coarse []int64) {
	for i := 0; i < 100*n; i++ {
		fine = append(fine, int64(i%100))
		coarse = append(coarse, int64(i%100/5))
	}
	return fine, coarse
}

func TestPachinko(t *testing.T) {
	fine, coarse := cifar100Labels(60)
	topCoarse := map[float64]float64{}
	for _, alpha := range []float64{0.1, 100} {
		parts, err := Pachinko(fine, coarse, 100, 20, 100, alpha, 10, testRand(6))
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, len(fine))
		var share float64
		for j, p := range parts {
			if len(p) != len(fine)/100 {
				t.Fatalf("client %d has %d samples, want %d", j, len(p), len(fine)/100)
			}
			counts := make([]float64, 20)
			for _, i := range p {
				if seen[i] {
					t.Fatalf("sample %d drawn twice", i)
				}
				seen[i] = true
				counts[coarse[i]]++
			}
			share += slices.Max(counts) / float64(len(p))
		}
		topCoarse[alpha] = share / 100
	}
	t.Logf("mean share of a client's largest coarse label: %v", topCoarse)
	// Dir(0.1) over 20 coarse labels concentrates on one or two; Dir(100) is nearly uniform (1/20)
	if !(topCoarse[0.1] > 0.4 && topCoarse[100] < 0.15) {
		t.Fatalf("coarse mixtures not as specified: %v", topCoarse)
	}
}

func TestCoarseGroupsAndDomains(t *testing.T) {
	fine, coarse := cifar100Labels(10)
	parts, err := CoarseGroups(fine, coarse, 100, 20, 100, testRand(7))
	if err != nil {
		t.Fatal(err)
	}
	checkCover(t, parts, len(fine))
	for j, p := range parts {
		for _, i := range p {
			if coarse[i] != int64(j/5) {
				t.Fatalf("client %d has a sample of coarse class %d", j, coarse[i])
			}
		}
	}
	labels := balancedLabels(4000, 10)
	domains := make([]int64, len(labels))
	for i := range domains {
		domains[i] = int64(i / 1000)
	}
	dparts, err := DomainDirichlet(labels, domains, 10, 4, 4, DirichletConfig{Alpha: 1, MinSize: 20}, testRand(8))
	if err != nil {
		t.Fatal(err)
	}
	checkCover(t, dparts, len(labels))
	for j, p := range dparts {
		for _, i := range p {
			if domains[i] != int64(j/4) {
				t.Fatalf("client %d (domain %d) has a sample of domain %d", j, j/4, domains[i])
			}
		}
	}
}

func TestHoldOutSplitAndNoise(t *testing.T) {
	novel, err := HoldOut(50, 0.2, testRand(9))
	if err != nil || len(novel) != 10 || !slices.IsSorted(novel) {
		t.Fatalf("hold-out %v, %v", novel, err)
	}
	if _, err := HoldOut(50, 1, testRand(9)); err == nil {
		t.Fatal("holding out every client accepted")
	}
	train, test, err := TrainTestSplit([][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10, 11, 12}}, 0.75, testRand(10))
	if err != nil || len(train[0]) != 7 || len(test[0]) != 3 || len(train[1]) != 2 || len(test[1]) != 1 {
		t.Fatalf("75/25 split: %v %v %v", train, test, err)
	}
	if got := NoiseLevels(5, 0.4); got[0] != 0 || got[4] != 0.4 || got[2] != 0.2 {
		t.Fatalf("noise levels %v", got)
	}
}
