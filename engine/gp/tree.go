package gp

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Node is a node of a client's class tree. An inner node holds a binary GP that tells
// its Left classes from its Right ones; a leaf holds one class.
type Node struct {
	Classes     []int // sorted
	Left, Right *Node // nil at a leaf
}

// Leaf reports whether n holds a single class.
func (n *Node) Leaf() bool { return n.Left == nil }

// Inner lists the inner nodes in breadth-first order (root first).
func (n *Node) Inner() []*Node {
	var out []*Node
	q := []*Node{n}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if x.Leaf() {
			continue
		}
		out = append(out, x)
		q = append(q, x.Left, x.Right)
	}
	return out
}

// BuildTree splits classes (with their mean features means[i] for classes[i]) top-down
// into a binary tree, as the official code's build_tree: a node of more than two classes
// is split by 2-means on its classes' mean features (sklearn's KMeans with 50 restarts
// there; Lloyd's iterations from k-means++ starts, restarts of them, keeping the least
// within-cluster sum of squares, here); a node of two classes splits into one each. The
// branch that holds the smallest class id is the left one, so the tree does not depend on
// how the clusters happen to be numbered.
func BuildTree(classes []int, means [][]float64, restarts int, r *rand.Rand) *Node {
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return classes[a] - classes[b] })
	cs, ms := make([]int, len(classes)), make([][]float64, len(classes))
	for i, o := range order {
		cs[i], ms[i] = classes[o], means[o]
	}
	return build(cs, ms, restarts, r)
}

func build(classes []int, means [][]float64, restarts int, r *rand.Rand) *Node {
	n := &Node{Classes: classes}
	if len(classes) < 2 {
		return n
	}
	var assign []int
	if len(classes) == 2 {
		assign = []int{0, 1}
	} else {
		assign = TwoMeans(means, restarts, r)
	}
	var lc, rc []int
	var lm, rm [][]float64
	for i, a := range assign {
		if a == assign[0] { // classes[0], the smallest id, goes left
			lc, lm = append(lc, classes[i]), append(lm, means[i])
		} else {
			rc, rm = append(rc, classes[i]), append(rm, means[i])
		}
	}
	n.Left, n.Right = build(lc, lm, restarts, r), build(rc, rm, restarts, r)
	return n
}

// TwoMeans clusters points (at least two) into two non-empty clusters and returns each
// point's cluster, 0 or 1: Lloyd's algorithm from restarts k-means++ starts (at least one),
// keeping the assignment of least within-cluster sum of squares.
func TwoMeans(points [][]float64, restarts int, r *rand.Rand) []int {
	best, bestCost := []int(nil), math.Inf(1)
	for range max(restarts, 1) {
		assign, cost := lloyd2(points, r)
		if cost < bestCost {
			best, bestCost = assign, cost
		}
	}
	return best
}

func sqDist(a, b []float64) float64 {
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

// lloyd2 is one run of 2-means: the first centre a uniformly drawn point, the second drawn
// with probability proportional to the squared distance to it (k-means++), then Lloyd's
// iterations until the assignment stops changing. A cluster that would be empty (all
// points equal) takes the point farthest from the other centre.
func lloyd2(points [][]float64, r *rand.Rand) ([]int, float64) {
	n := len(points)
	i0 := r.IntN(n)
	c0 := points[i0]
	w := make([]float64, n)
	var total float64
	for i, p := range points {
		w[i] = sqDist(p, c0)
		total += w[i]
	}
	c1 := points[(i0+1+r.IntN(n-1))%n] // all points equal: any other
	if total > 0 {
		u := r.Float64() * total
		for i, v := range w {
			if u < v {
				c1 = points[i]
				break
			}
			u -= v
		}
	}
	centres := [2][]float64{slices.Clone(c0), slices.Clone(c1)}
	assign := make([]int, n)
	for i := range assign {
		assign[i] = -1
	}
	var cost float64
	for iter := 0; iter < 100; iter++ {
		changed := false
		cost = 0
		for i, p := range points {
			d0, d1 := sqDist(p, centres[0]), sqDist(p, centres[1])
			a := 0
			if d1 < d0 {
				a = 1
			}
			if assign[i] != a {
				assign[i], changed = a, true
			}
			cost += math.Min(d0, d1)
		}
		counts := [2]int{}
		for _, a := range assign {
			counts[a]++
		}
		for c := range 2 {
			if counts[c] == 0 {
				far, farD := 0, -1.0
				for i, p := range points {
					if d := sqDist(p, centres[1-c]); d > farD {
						far, farD = i, d
					}
				}
				assign[far], changed = c, true
			}
		}
		if !changed {
			break
		}
		for c := range 2 {
			centres[c] = make([]float64, len(points[0]))
			cnt := 0
			for i, p := range points {
				if assign[i] == c {
					cnt++
					for d, v := range p {
						centres[c][d] += v
					}
				}
			}
			for d := range centres[c] {
				centres[c][d] /= float64(cnt)
			}
		}
	}
	return assign, cost
}
