package gp

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Objective is what training minimizes at every inner node of a client's tree.
type Objective int

const (
	// Predictive is the official code's default (--objective predictive_likelihood): each
	// branch's samples are split at random, PredictRatio of them held out, and the loss is
	// the held-out samples' cross-entropy under the GP conditioned on the rest.
	Predictive Objective = iota
	// Marginal is the negative augmented marginal likelihood of all the node's samples
	// per sample (--objective marginal_likelihood).
	Marginal
)

// Config is a client GP's setting.
type Config struct {
	Kernel       Kernel
	Draws, Steps int // Gibbs chains and sweeps
	Objective    Objective
	PredictRatio float64 // Predictive: the fraction of each branch's samples held out
	Restarts     int     // 2-means restarts when splitting a node
}

// Validate reports a setting that cannot run.
func (c Config) Validate() error {
	switch {
	case !(c.Kernel.OutputScale > 0) || !(c.Kernel.LengthScale > 0) || !(c.Kernel.Jitter >= 0):
		return fmt.Errorf("gp: the kernel needs outputscale > 0, lengthscale > 0 and jitter >= 0, got %+v", c.Kernel)
	case c.Draws < 1 || c.Steps < 0:
		return fmt.Errorf("gp: need at least one Gibbs chain and no negative steps, got %d chains, %d steps", c.Draws, c.Steps)
	case c.Objective == Predictive && !(c.PredictRatio > 0 && c.PredictRatio < 1):
		return fmt.Errorf("gp: the predictive objective holds out a fraction in (0, 1), got %g", c.PredictRatio)
	case c.Objective != Predictive && c.Objective != Marginal:
		return fmt.Errorf("gp: unknown objective %d", c.Objective)
	}
	return nil
}

// classMeans returns the sorted classes of y and each one's mean feature.
func classMeans(feat [][]float64, y []int) ([]int, [][]float64) {
	var classes []int
	for _, c := range y {
		if !slices.Contains(classes, c) {
			classes = append(classes, c)
		}
	}
	slices.Sort(classes)
	means := make([][]float64, len(classes))
	counts := make([]int, len(classes))
	for i, c := range y {
		j, _ := slices.BinarySearch(classes, c)
		if means[j] == nil {
			means[j] = make([]float64, len(feat[i]))
		}
		for d, v := range feat[i] {
			means[j][d] += v
		}
		counts[j]++
	}
	for j := range means {
		for d := range means[j] {
			means[j][d] /= float64(counts[j])
		}
	}
	return classes, means
}

// members lists the samples of y that belong to node n, and whether each is in n's left
// branch.
func members(n *Node, y []int) (idx []int, left []bool) {
	for i, c := range y {
		if _, in := slices.BinarySearch(n.Classes, c); in {
			_, l := slices.BinarySearch(n.Left.Classes, c)
			idx, left = append(idx, i), append(left, l)
		}
	}
	return idx, left
}

// Tree is the class tree of samples feat with labels y: BuildTree on the classes' mean
// features (the features as the network gives them, not normalized, as the official code).
func Tree(feat [][]float64, y []int, restarts int, r *rand.Rand) *Node {
	classes, means := classMeans(feat, y)
	return BuildTree(classes, means, restarts, r)
}

// Classifier is a client's GP classifier conditioned on its training samples: every inner
// node's binary GP on the samples of its classes, through its Gibbs chains.
type Classifier struct {
	cfg   Config
	h     Hermite
	tree  *Node
	x     [][]float64 // the training features, normalized
	nodes []fitted    // per inner node, in tree.Inner() order
}

type fitted struct {
	node          *Node
	idx           []int
	post          *Posterior
	wLeft, wRight float64 // the prior-ratio correction (Balanced); 0, 0: none
}

// fitNode fits an inner node's binary GP: the kernel of the samples under it (gram's rows
// and columns idx, with jitter), their branch labels, and the posterior over the Gibbs
// draws of their Pólya-Gamma variables.
func fitNode(gram *mat.Dense, n *Node, y []int, cfg Config, r *rand.Rand) ([]int, []bool, *Posterior, error) {
	idx, left := members(n, y)
	k := sub(gram, idx, cfg.Kernel.Jitter)
	omega, err := Gibbs(k, left, cfg.Draws, cfg.Steps, r)
	if err != nil {
		return nil, nil, nil, err
	}
	post, err := NewPosterior(k, left, omega)
	return idx, left, post, err
}

// Fit builds the tree of a client's training samples (features feat, labels y) and samples
// every inner node's GP posterior, drawing from r.
func Fit(cfg Config, h Hermite, feat [][]float64, y []int, r *rand.Rand) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(feat) == 0 || len(feat) != len(y) {
		return nil, fmt.Errorf("gp: fit: %d features, %d labels", len(feat), len(y))
	}
	c := &Classifier{cfg: cfg, h: h, tree: Tree(feat, y, cfg.Restarts, r), x: Normalize(feat)}
	gram := cfg.Kernel.Cross(c.x, c.x)
	for _, n := range c.tree.Inner() {
		idx, _, post, err := fitNode(gram, n, y, cfg, r)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, fitted{node: n, idx: idx, post: post})
	}
	return c, nil
}

// Classes is the client's classes, sorted.
func (c *Classifier) Classes() []int { return c.tree.Classes }

// Predict returns P(class | x) [len(feat)][classes] for new samples: the product of the
// branch probabilities along each class's path from the root (the official
// eval_tree_full_path); classes the client has no training sample of get 0.
func (c *Classifier) Predict(feat [][]float64, classes int) ([][]float64, error) {
	if last := c.tree.Classes[len(c.tree.Classes)-1]; last >= classes {
		return nil, fmt.Errorf("gp: predict: class %d of %d", last, classes)
	}
	xt := Normalize(feat)
	out := make([][]float64, len(xt))
	for j := range out {
		out[j] = make([]float64, classes)
		for _, cl := range c.tree.Classes {
			out[j][cl] = 1
		}
	}
	if len(xt) == 0 {
		return out, nil
	}
	kss := make([]float64, len(xt))
	for j := range kss {
		kss[j] = c.cfg.Kernel.OutputScale + c.cfg.Kernel.Jitter // k(x, x) = s on normalized features
	}
	for _, f := range c.nodes {
		train := make([][]float64, len(f.idx))
		for i, s := range f.idx {
			train[i] = c.x[s]
		}
		pl, err := f.post.ProbLeft(c.h, c.cfg.Kernel.Cross(train, xt), kss)
		if err != nil {
			return nil, err
		}
		if f.wLeft > 0 {
			for j := range pl {
				pl[j], _ = Balanced(pl[j], f.wLeft, f.wRight)
			}
		}
		for j := range out {
			for _, cl := range f.node.Left.Classes {
				out[j][cl] *= pl[j]
			}
			for _, cl := range f.node.Right.Classes {
				out[j][cl] *= 1 - pl[j]
			}
		}
	}
	return out, nil
}

// Plan is the random part of one training loss: the batch's tree, each inner node's split
// into training and held-out samples and the Gibbs chains' ω. Given a plan the loss is a
// deterministic function of the features (Eval), the function the gradient is of.
type Plan struct {
	Tree  *Node
	nodes []planNode
}

type planNode struct {
	train, held         []int
	trainLeft, heldLeft []bool
	omega               [][]float64
	wLeft, wRight       float64 // Balanced's weights; 0, 0: none
}

// NewPlan draws the plan of a batch's loss from r: the tree of the batch's classes (from
// their mean features in this batch), for every inner node the held-out split (Predictive:
// int(PredictRatio·n) of each branch's n samples, at random, as the official
// train_test_split; a node left with no held-out or no training sample has no loss) and
// the Gibbs chains on the node's training samples under the kernel of feat.
func NewPlan(cfg Config, feat [][]float64, y []int, r *rand.Rand) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Tree: Tree(feat, y, cfg.Restarts, r)}
	gram := cfg.Kernel.Cross(Normalize(feat), Normalize(feat))
	for _, n := range p.Tree.Inner() {
		idx, left := members(n, y)
		var pn planNode
		if cfg.Objective == Marginal {
			pn.train, pn.trainLeft = idx, left
		} else {
			for _, side := range []bool{true, false} {
				var mine []int
				for i, l := range left {
					if l == side {
						mine = append(mine, idx[i])
					}
				}
				perm := r.Perm(len(mine))
				k := int(float64(len(mine)) * cfg.PredictRatio)
				for j, pi := range perm {
					if j < k {
						pn.held, pn.heldLeft = append(pn.held, mine[pi]), append(pn.heldLeft, side)
					} else {
						pn.train, pn.trainLeft = append(pn.train, mine[pi]), append(pn.trainLeft, side)
					}
				}
			}
			if len(pn.held) == 0 || len(pn.train) == 0 {
				continue
			}
		}
		omega, err := Gibbs(sub(gram, pn.train, cfg.Kernel.Jitter), pn.trainLeft, cfg.Draws, cfg.Steps, r)
		if err != nil {
			return nil, err
		}
		pn.omega = omega
		p.nodes = append(p.nodes, pn)
	}
	return p, nil
}

// Eval is the plan's loss at features feat [B][D], the sum of its nodes' losses (the
// official train_tree sums them), and its gradient G [B, B] with respect to the batch's
// kernel matrix K_ij = k(x_i, x_j) (no jitter: jitter is a constant), each entry taken as
// an independent input.
func (p *Plan) Eval(cfg Config, h Hermite, feat [][]float64) (float64, *mat.Dense, error) {
	b := len(feat)
	g := mat.NewDense(max(b, 1), max(b, 1), nil)
	if len(p.nodes) == 0 {
		return 0, g, nil
	}
	x := Normalize(feat)
	gram := cfg.Kernel.Cross(x, x)
	var loss float64
	for _, n := range p.nodes {
		ktt := sub(gram, n.train, cfg.Kernel.Jitter)
		if cfg.Objective == Marginal {
			l, dk, err := MarginalLoss(ktt, n.omega, n.trainLeft)
			if err != nil {
				return 0, nil, err
			}
			loss += l
			scatter(g, dk, n.train, n.train)
			continue
		}
		khh := make([]float64, len(n.held))
		for j, s := range n.held {
			khh[j] = gram.At(s, s) + cfg.Kernel.Jitter
		}
		wl, wr := 1.0, 1.0
		if n.wLeft > 0 {
			wl, wr = n.wLeft, n.wRight
		}
		l, dtt, dth, dhh, err := BalancedPredictiveLoss(h, ktt, block(gram, n.train, n.held), khh, n.omega, n.trainLeft, n.heldLeft, wl, wr)
		if err != nil {
			return 0, nil, err
		}
		loss += l
		scatter(g, dtt, n.train, n.train)
		scatter(g, dth, n.train, n.held)
		for j, s := range n.held {
			g.Set(s, s, g.At(s, s)+dhh[j])
		}
	}
	return loss, g, nil
}

// scatter adds d [len(rows), len(cols)] into g's rows and columns.
func scatter(g, d *mat.Dense, rows, cols []int) {
	for i, a := range rows {
		for j, b := range cols {
			g.Set(a, b, g.At(a, b)+d.At(i, j))
		}
	}
}

// Loss is one client's training loss on a batch (features feat, labels y) and its
// gradient with respect to the batch's kernel matrix: NewPlan, then Eval.
func Loss(cfg Config, h Hermite, feat [][]float64, y []int, r *rand.Rand) (float64, *mat.Dense, error) {
	p, err := NewPlan(cfg, feat, y, r)
	if err != nil {
		return 0, nil, err
	}
	return p.Eval(cfg, h, feat)
}

// FeatureGrad contracts G (∂L/∂K_ij, K_ij = k(x_i, x_j)) with the kernel's Jacobian: ∂L/∂x
// for raw features x [B][D], through the normalization x̂ = x/‖x‖. With ∂K_ij/∂x̂_i =
// K_ij·x̂_j/ℓ², ∂L/∂x̂_i = Σ_j (G_ij + G_ji)·K_ij·x̂_j/ℓ², and ∂L/∂x_i = (I − x̂_i x̂_iᵀ)·
// ∂L/∂x̂_i/‖x_i‖. What autograd computes through the kernel's ops; here for tests.
func (k Kernel) FeatureGrad(feat [][]float64, g *mat.Dense) [][]float64 {
	x := Normalize(feat)
	gram := k.Cross(x, x)
	l2 := k.LengthScale * k.LengthScale
	out := make([][]float64, len(x))
	for i := range x {
		dx := make([]float64, len(x[i]))
		for j := range x {
			c := (g.At(i, j) + g.At(j, i)) * gram.At(i, j) / l2
			for d := range dx {
				dx[d] += c * x[j][d]
			}
		}
		var norm, dot float64
		for d, v := range feat[i] {
			norm += v * v
			dot += dx[d] * x[i][d]
		}
		norm = sqrtMax(norm)
		out[i] = make([]float64, len(dx))
		for d := range dx {
			out[i][d] = (dx[d] - dot*x[i][d]) / norm
		}
	}
	return out
}

// branchWeights is the prior-ratio correction of a node conditioned on samples whose
// branch counts are q (left, right) for data whose counts are p: w_b = (p_b/Σp)/(q_b/Σq),
// the official pFedGP-IP evaluation's P(y)/Q(y).
func branchWeights(pLeft, pRight, qLeft, qRight int) (float64, float64) {
	p, q := float64(pLeft+pRight), float64(qLeft+qRight)
	return (float64(pLeft) / p) / (float64(qLeft) / q), (float64(pRight) / p) / (float64(qRight) / q)
}

// count returns how many of left are true and false.
func count(left []bool) (l, r int) {
	for _, b := range left {
		if b {
			l++
		} else {
			r++
		}
	}
	return l, r
}

// withInducing appends the inducing inputs ind (labels indY) to a client's samples: the
// rows and labels the inducing-point variant's kernels are taken over, the samples first.
func withInducing(feat [][]float64, y []int, ind [][]float64, indY []int) ([][]float64, []int, error) {
	if len(feat) == 0 || len(feat) != len(y) || len(ind) != len(indY) {
		return nil, nil, fmt.Errorf("gp: %d features, %d labels, %d inducing inputs, %d inducing labels", len(feat), len(y), len(ind), len(indY))
	}
	return append(slices.Clip(feat), ind...), append(slices.Clip(y), indY...), nil
}

// inducingMembers splits node n's members of the rows all (labels y: the b samples, then
// the inducing inputs) into samples and inducing inputs; an error when a branch has no
// inducing input (its classes have none).
func inducingMembers(n *Node, y []int, b int) (data, ind []int, dataLeft, indLeft []bool, err error) {
	idx, left := members(n, y)
	for i, s := range idx {
		if s < b {
			data, dataLeft = append(data, s), append(dataLeft, left[i])
		} else {
			ind, indLeft = append(ind, s), append(indLeft, left[i])
		}
	}
	if l, r := count(indLeft); l == 0 || r == 0 {
		return nil, nil, nil, nil, fmt.Errorf("gp: node of classes %v: a branch without inducing inputs", n.Classes)
	}
	return data, ind, dataLeft, indLeft, nil
}

// FitInducing is pFedGP-IP-data's classifier (the official pFedGP_full_data.py
// pFedGPIPData and tree.py BinaryTreepFedGPIPData): the tree of the client's samples (feat,
// y) as Fit's, but every inner node's GP conditioned on its samples together with the
// inducing inputs of its classes (ind, labels indY: class c's inputs are labelled c), and
// its branch probability corrected by the prior ratio of the samples' branch counts to the
// conditioning set's (branchWeights, Balanced).
func FitInducing(cfg Config, h Hermite, feat [][]float64, y []int, ind [][]float64, indY []int, r *rand.Rand) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	all, ally, err := withInducing(feat, y, ind, indY)
	if err != nil {
		return nil, fmt.Errorf("gp: fit: %w", err)
	}
	c := &Classifier{cfg: cfg, h: h, tree: Tree(feat, y, cfg.Restarts, r), x: Normalize(all)}
	gram := cfg.Kernel.Cross(c.x, c.x)
	for _, n := range c.tree.Inner() {
		_, _, dataLeft, _, err := inducingMembers(n, ally, len(feat))
		if err != nil {
			return nil, err
		}
		idx, left, post, err := fitNode(gram, n, ally, cfg, r)
		if err != nil {
			return nil, err
		}
		pl, pr := count(dataLeft)
		ql, qr := count(left)
		wl, wr := branchWeights(pl, pr, ql, qr)
		c.nodes = append(c.nodes, fitted{node: n, idx: idx, post: post, wLeft: wl, wRight: wr})
	}
	return c, nil
}

// NewInducingPlan is pFedGP-IP-data's training plan (the official pFedGPIPData
// forward_predicitive): the tree of the batch's samples (feat, y), and at every inner node
// the GP conditioned on the inducing inputs of the node's classes alone (ind, indY), its
// chains run on their kernel, and every sample of the node held out: the loss is the
// samples' predictive cross-entropy, each branch probability corrected by the prior ratio
// of the samples' branch counts to the inducing inputs' (branchWeights). The plan's rows,
// for Eval, are the samples followed by the inducing inputs.
func NewInducingPlan(cfg Config, feat [][]float64, y []int, ind [][]float64, indY []int, r *rand.Rand) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Objective != Predictive {
		return nil, fmt.Errorf("gp: the inducing-point variant trains the predictive objective only")
	}
	all, ally, err := withInducing(feat, y, ind, indY)
	if err != nil {
		return nil, fmt.Errorf("gp: plan: %w", err)
	}
	p := &Plan{Tree: Tree(feat, y, cfg.Restarts, r)}
	x := Normalize(all)
	gram := cfg.Kernel.Cross(x, x)
	for _, n := range p.Tree.Inner() {
		data, in, dataLeft, inLeft, err := inducingMembers(n, ally, len(feat))
		if err != nil {
			return nil, err
		}
		pn := planNode{train: in, trainLeft: inLeft, held: data, heldLeft: dataLeft}
		pl, pr := count(dataLeft)
		ql, qr := count(inLeft)
		pn.wLeft, pn.wRight = branchWeights(pl, pr, ql, qr)
		if pn.omega, err = Gibbs(sub(gram, in, cfg.Kernel.Jitter), inLeft, cfg.Draws, cfg.Steps, r); err != nil {
			return nil, err
		}
		p.nodes = append(p.nodes, pn)
	}
	return p, nil
}

// InducingLoss is one client's pFedGP-IP-data training loss on a batch and its gradient
// with respect to the kernel matrix of the batch's samples followed by the inducing
// inputs ([len(feat)+len(ind)]²): NewInducingPlan, then Eval.
func InducingLoss(cfg Config, h Hermite, feat [][]float64, y []int, ind [][]float64, indY []int, r *rand.Rand) (float64, *mat.Dense, error) {
	p, err := NewInducingPlan(cfg, feat, y, ind, indY, r)
	if err != nil {
		return 0, nil, err
	}
	all, _, _ := withInducing(feat, y, ind, indY)
	return p.Eval(cfg, h, all)
}
