package gp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// leaves lists a tree's leaf classes left to right.
func leaves(n *Node) []int {
	if n.Leaf() {
		return n.Classes
	}
	return append(leaves(n.Left), leaves(n.Right)...)
}

// Class means in two well-separated groups ({2, 5, 7} near the origin, {0, 3} far away):
// the root splits the groups, whatever order the classes come in; the group of three
// splits its outlier (7) off; every class is one leaf; the branch holding the smallest
// class id is the left one.
func TestBuildTreeSeparable(t *testing.T) {
	means := map[int][]float64{2: {0, 0}, 5: {0.1, 0}, 7: {0.9, 1}, 0: {20, 20}, 3: {20.2, 19.9}}
	for seed := uint64(0); seed < 5; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		classes := []int{2, 5, 7, 0, 3}
		r.Shuffle(len(classes), func(i, j int) { classes[i], classes[j] = classes[j], classes[i] })
		ms := make([][]float64, len(classes))
		for i, c := range classes {
			ms[i] = means[c]
		}
		root := BuildTree(classes, ms, 10, r)
		if !slices.Equal(root.Classes, []int{0, 2, 3, 5, 7}) {
			t.Fatalf("root classes %v", root.Classes)
		}
		if !slices.Equal(root.Left.Classes, []int{0, 3}) || !slices.Equal(root.Right.Classes, []int{2, 5, 7}) {
			t.Fatalf("seed %d: root splits %v | %v", seed, root.Left.Classes, root.Right.Classes)
		}
		if !slices.Equal(root.Right.Left.Classes, []int{2, 5}) || !slices.Equal(root.Right.Right.Classes, []int{7}) {
			t.Fatalf("seed %d: {2,5,7} splits %v | %v", seed, root.Right.Left.Classes, root.Right.Right.Classes)
		}
		got := leaves(root)
		slices.Sort(got)
		if !slices.Equal(got, []int{0, 2, 3, 5, 7}) || len(root.Inner()) != 4 {
			t.Fatalf("leaves %v, %d inner nodes", leaves(root), len(root.Inner()))
		}
	}
	if one := BuildTree([]int{4}, [][]float64{{1}}, 3, rand.New(rand.NewPCG(1, 1))); !one.Leaf() || len(one.Inner()) != 0 {
		t.Fatal("a single class is a leaf")
	}
}

// Identical class means still split into two non-empty sides.
func TestTwoMeansDegenerate(t *testing.T) {
	a := TwoMeans([][]float64{{1, 1}, {1, 1}, {1, 1}}, 3, rand.New(rand.NewPCG(2, 2)))
	if !slices.Contains(a, 0) || !slices.Contains(a, 1) {
		t.Fatalf("assignment %v", a)
	}
}

// A client of three classes whose features sit around three directions: the fitted GP
// tree predicts held-out points of each class, its probabilities over the client's classes
// sum to one (each node splits its mass in p and 1 − p), and a class the client never
// saw gets 0.
func TestClassifierSeparable(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	dirs := map[int][]float64{1: {1, 0, 0}, 4: {0, 1, 0}, 6: {0, 0, 1}}
	draw := func(c, n int) ([][]float64, []int) {
		var x [][]float64
		var y []int
		for range n {
			v := make([]float64, 3)
			for d := range v {
				v[d] = 3*dirs[c][d] + 0.3*r.NormFloat64()
			}
			x, y = append(x, v), append(y, c)
		}
		return x, y
	}
	var feat [][]float64
	var y []int
	for _, c := range []int{4, 1, 6} {
		x, l := draw(c, 15)
		feat, y = append(feat, x...), append(y, l...)
	}
	h, _ := NewHermite(HermitePoints)
	cfg := Config{Kernel: testKernel, Draws: 10, Steps: 5, Objective: Predictive, PredictRatio: 0.5, Restarts: 10}
	clf, err := Fit(cfg, h, feat, y, r)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(clf.Classes(), []int{1, 4, 6}) {
		t.Fatalf("classes %v", clf.Classes())
	}
	for _, c := range []int{1, 4, 6} {
		x, _ := draw(c, 5)
		p, err := clf.Predict(x, 8)
		if err != nil {
			t.Fatal(err)
		}
		for j, row := range p {
			var sum float64
			for _, v := range row {
				sum += v
			}
			if math.Abs(sum-1) > 1e-12 || row[0] != 0 || row[7] != 0 {
				t.Fatalf("class %d point %d: probabilities %v", c, j, row)
			}
			if best := slices.Index(row, slices.Max(row)); best != c || row[c] < 0.7 {
				t.Errorf("class %d point %d: probabilities %v", c, j, row)
			}
		}
	}
}

// The loss of a batch of one class has no inner node: zero, with a zero gradient.
func TestLossOneClass(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h, _ := NewHermite(HermitePoints)
	cfg := Config{Kernel: testKernel, Draws: 2, Steps: 1, Objective: Predictive, PredictRatio: 0.5, Restarts: 1}
	l, g, err := Loss(cfg, h, randFeatures(r, 4, 3), []int{2, 2, 2, 2}, r)
	if err != nil || l != 0 || g.Norm(1) != 0 {
		t.Fatal(l, err)
	}
}
