package algo

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/gp"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// PFedGPIP is pFedGP's inducing-point variant pFedGP-IP-data (Achituve et al., NeurIPS
// 2021, the inducing-point model; as its official code runs it: IdanAchituve/pFedGP,
// pFedGP/pFedGP_full_data.py pFedGPIPData, pFedGP/tree.py BinaryTreepFedGPIPData and
// experiments/heterogeneous_class_dist/trainer_ip.py --method pFedGP-data). Everything is
// PFedGP's (the shared embedding network, the per-client class tree, the RBF kernel on
// L2-normalized embeddings, Pólya-Gamma Gibbs chains, Gauss–Hermite predictive) except
// what the GPs are conditioned on:
//
//   - A set of Inducing inducing inputs per class, X̄ [classes, Inducing, EmbedDim], lives
//     in the embedding space. It is a parameter like the network's: shared by every
//     client, trained by the clients' SGD and averaged by the server (the official trainer
//     optimizes it with the network and averages it with the network's weights), initialized
//     at N(0, 0.01²) as the official code. Its inputs carry their class as label: at a tree
//     node, class c's inputs are labelled with c's branch.
//   - Training (the predictive objective; gp.NewInducingPlan): at every inner node the GP
//     is conditioned on the inducing inputs of the node's classes alone (ω sampled by the
//     Gibbs chains on their kernel), and every real sample of the node is held out: the
//     loss is their predictive cross-entropy, so the inducing inputs are trained to stand
//     for the clients' data, and the network to embed near them. The branch probability is
//     corrected by the prior ratio of the samples' branch counts to the inducing inputs'
//     (gp.Balanced): P(y | x) ∝ (P(y)/Q(y))·Q(y | x).
//   - Evaluation (gp.FitInducing): every node's GP is conditioned on the client's training
//     samples together with the inducing inputs of its classes, with the same correction
//     (P from the samples' branch counts, Q from the conditioning set's), so a client with
//     few samples borrows the shared inducing inputs.
//
// The gradient reaches X̄ as it reaches the embeddings: the host returns ∂L/∂K over the
// rows [batch samples; the inducing inputs of the batch's classes], and the device
// recomputes that kernel from the embeddings and the gathered rows of X̄.
//
// Choices and simplifications, against the paper and the official code:
//   - This is pFedGP-IP-data, the variant whose inducing inputs are shared across clients
//     (the one the paper evaluates for clients with little data); pFedGP-IP-compute (a FITC
//     sparse GP whose inducing inputs replace a client's data to save computation) is not
//     implemented.
//   - The training correction is P(y)/Q(y) with Q the inducing inputs' branch proportions;
//     the official training multiplies by the samples' branch counts alone, which is the
//     same whenever a node's two branches hold as many classes (every node of a two-class
//     client) and differs by Q otherwise.
//   - As PFedGP: a step is one batch (the tree is the batch's classes'), the kernel's s and
//     ℓ are fixed; the server's mean is uniform, the loss scaled and the gradient clipped as
//     the official trainer_ip.py (PFedGPConfig's Uniform, LossScaler, Clip), except that the
//     clipped norm includes X̄'s gradient (the official clips the network's alone). The
//     marginal objective is not offered (the official pFedGP-IP-data trains the predictive
//     objective only).
//   - Costs: a training node of c classes runs its chains on c·Inducing inputs (D·(S+1)
//     factorizations of that size per step, whatever the batch), and an evaluation node
//     on its samples plus c·Inducing inputs; the full GP's costs (pfedgp.go) otherwise.
//   - The embedding network and X̄ share the run's local optimizer (the official code's SGD
//     with lr, momentum 0.9 and weight decay over both).
type PFedGPIP struct {
	PFedGP
}

// PrepareHooks are PFedGP's, with the inducing inputs joined beside every model the run
// builds (Wrap) and the predictive objective checked (Bind).
func (p *PFedGPIP) PrepareHooks() fl.PrepareHooks {
	h := p.PFedGP.PrepareHooks()
	h.Wrap, h.Bind = p.Wrap, p.Bind
	return h
}

// TrainHooks are PFedGP's with the inducing-point loss.
func (p *PFedGPIP) TrainHooks() fl.TrainHooks {
	h := p.PFedGP.TrainHooks()
	h.Loss = p.Loss
	return h
}

// EvalHooks are PFedGP's, conditioned on the inducing inputs too.
func (p *PFedGPIP) EvalHooks() fl.EvalHooks {
	h := p.PFedGP.EvalHooks()
	h.Condition = p.Condition
	return h
}

// inducingStd is the official initialization's scale, torch.randn(...)·0.01.
const inducingStd = 0.01

// Name is "pfedgp-ip".
func (*PFedGPIP) Name() string { return "pfedgp-ip" }

// Validate reports a setting that cannot run, naming its config key.
func (p *PFedGPIP) Validate() error {
	if err := predictiveOnly(p.Objective); err != nil {
		return err
	}
	return p.PFedGPConfig.Validate()
}

// Bind checks the setting and binds PFedGP.
func (p *PFedGPIP) Bind(env fl.Env) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return p.PFedGP.Bind(env)
}

// Wrap joins the inducing inputs X̄ ([K, classes, Inducing, EmbedDim], "inducing.points",
// role inducing, one set per class of w.Classes) beside m.
func (p *PFedGPIP) Wrap(m model.Model, w fl.Wrapping) (model.Model, error) {
	if w.Classes < 1 {
		return nil, fmt.Errorf("pfedgp-ip: the number of classes is unknown (the partition has no labelled training set)")
	}
	gen := w.Gen
	ps := m.Params()
	pts, err := model.NewFree("points", model.RoleInducing, 0, ps.K, ps.Device, ps.DType, gen, int64(w.Classes), int64(p.Inducing), p.EmbedDim)
	if err != nil {
		return nil, err
	}
	if t := pts.Params().List[0].T; t != nil && gen != nil {
		s := cuda.NewScope()
		s.SetGradEnabled(false)
		s.CopyFrom(t, s.MulScalar(s.Randn(gen, t.DType(), t.Device(), t.Shape()...), inducingStd))
		err := s.Err()
		s.Close()
		if err != nil {
			pts.Close()
			return nil, err
		}
	}
	j, err := model.Join([]string{"", "inducing."}, m, pts)
	if err != nil {
		pts.Close()
		return nil, err
	}
	return j, nil
}

// points is m's X̄ tensor [K, classes, Inducing, EmbedDim].
func (p *PFedGPIP) points(s *cuda.Scope, m model.Model) *cuda.Tensor {
	pt := part(s, m, 1)
	if pt == nil {
		return nil
	}
	return pt.Params().List[0].T
}

// hostPoints copies X̄ [K, C, M, E] to the host: [K][C·M] rows of E.
func hostPoints(s *cuda.Scope, pts *cuda.Tensor) ([][][]float64, error) {
	k, c, m, e := int(pts.Size(0)), int(pts.Size(1)), int(pts.Size(2)), int(pts.Size(3))
	v, err := s.To(s.Detach(pts), cuda.Float64).Float64s()
	if err != nil {
		return nil, err
	}
	out := make([][][]float64, k)
	for r := range out {
		out[r] = make([][]float64, c*m)
		for i := range out[r] {
			out[r][i] = v[(r*c*m+i)*e : (r*c*m+i+1)*e]
		}
	}
	return out, nil
}

// inducingInputs are the host's inducing inputs hp ([C·M] rows) of the classes in labels,
// M per class, and their labels (inducingRows).
func inducingInputs(hp [][]float64, labels []int, m int) ([][]float64, []int) {
	idx, y := inducingRows(labels, m)
	ind := make([][]float64, len(idx))
	for i, row := range idx {
		ind[i] = hp[row]
	}
	return ind, y
}

// inducingRows lists the rows of X̄'s flattened [C·M] of the classes in labels (sorted),
// and their labels.
func inducingRows(labels []int, m int) (rows, y []int) {
	classes := slices.Clone(labels)
	slices.Sort(classes)
	for _, c := range slices.Compact(classes) {
		for i := 0; i < m; i++ {
			rows, y = append(rows, c*m+i), append(y, c)
		}
	}
	return rows, y
}

// Loss is each client's pFedGP-IP-data loss on its batch: see the type's comment.
func (p *PFedGPIP) Loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	z := m.Forward(s, b.X, pass) // [K, B, E]
	pts := p.points(s, m)        // [K, C, M, E]
	if s.Err() != nil {
		return nil
	}
	p.fitted.drop()
	hb := hostBatch(s, z, b, pass, "pfedgp-ip")
	if hb == nil {
		return nil
	}
	k, bs := int(z.Size(0)), int(z.Size(1))
	feat, labels, pos := hb.feat, hb.labels, hb.pos
	hp, err := hostPoints(s, pts)
	if err != nil {
		s.Fail(err)
		return nil
	}
	rows := make([][]int, k)
	np := 1 // the gathered rows per client, at least one so that shapes stay valid
	for r := range rows {
		rows[r], _ = inducingRows(labels[r], p.Inducing)
		np = max(np, len(rows[r]))
	}
	n := bs + np
	cfg := p.gpConfig(false)
	losses := make([]float64, k)
	g := make([]float64, k*n*n)
	err = gp.ForEach(k, func(r int) error {
		if len(feat[r]) == 0 {
			return nil
		}
		ind, indY := inducingInputs(hp[r], labels[r], p.Inducing)
		l, gr, err := gp.InducingLoss(cfg, p.h, feat[r], labels[r], ind, indY, rng.New(rng.Key{Seed: hb.seeds[r], Purpose: "pfedgp-ip/step", Round: -1, Client: -1}))
		if err != nil {
			return fmt.Errorf("client %d: %w", b.Clients[r], err)
		}
		losses[r] = l
		// host rows: the samples (at pos[r]), then the inducing inputs (at bs + i)
		at := func(i int) int {
			if i < len(pos[r]) {
				return pos[r][i]
			}
			return bs + i - len(pos[r])
		}
		nr, _ := gr.Dims()
		for i := 0; i < nr; i++ {
			for j := 0; j < nr; j++ {
				g[(r*n+at(i))*n+at(j)] = gr.At(i, j)
			}
		}
		return nil
	})
	if err != nil {
		s.Fail(fmt.Errorf("fl: pfedgp-ip: %w", err))
		return nil
	}
	idx := make([]int64, k*np) // padding rows gather row 0; their gradient entries are zero
	for r := range rows {
		for i, row := range rows[r] {
			idx[r*np+i] = int64(row)
		}
	}
	e := int64(p.EmbedDim)
	flat := s.Reshape(pts, int64(k), -1, e)
	gi := s.Expand(s.Unsqueeze(cuda.FromSlice(s, z.Device(), idx, int64(k), int64(np)), 2), int64(k), int64(np), e)
	all := s.Cat(1, z, s.Gather(flat, 1, gi)) // [K, B + P, E]
	return p.surrogate(s, all, g, n, losses)
}

// Condition fits each row's classifier to its client's embedded training samples and the
// inducing inputs of its classes (gp.FitInducing; EvalHooks.Condition).
func (p *PFedGPIP) Condition(s *cuda.Scope, m model.Model, ids []int, train fl.Embedded) error {
	feat, labels, _, err := hostRows(train.Feat, train.Y, train.Mask)
	if err != nil {
		return err
	}
	pts := p.points(s, m)
	if err := s.Err(); err != nil {
		return err
	}
	hp, err := hostPoints(s, pts)
	if err != nil {
		return err
	}
	cfg := p.gpConfig(true)
	fitted, err := fitClients(ids, feat, func(r int) (*gp.Classifier, error) {
		ind, indY := inducingInputs(hp[r], labels[r], p.Inducing)
		return gp.FitInducing(cfg, p.h, feat[r], labels[r], ind, indY, rng.New(rng.Key{Seed: p.seed, Purpose: "pfedgp-ip/eval", Round: -1, Client: ids[r]}))
	})
	p.fitted.set(m, fitted)
	return err
}

var (
	_ fl.PrepareStage = (*PFedGPIP)(nil)
	_ fl.TrainStage   = (*PFedGPIP)(nil)
	_ fl.ServerStage  = (*PFedGPIP)(nil)
	_ fl.EvalStage    = (*PFedGPIP)(nil)
)
