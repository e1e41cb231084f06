package algo

import (
	"fmt"
	"math"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/gp"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// PFedGP is pFedGP (Achituve, Shamsian, Navon, Chechik and Fetaya, "Personalized Federated
// Learning with Gaussian Processes", NeurIPS 2021), its full-GP version (pFedGP-Full, no
// inducing points), as its official code (IdanAchituve/pFedGP, pFedGP_full_data.py,
// tree.py and the heterogeneous-class trainer) runs it: a shared network φ, averaged over
// the round's clients (uniformly, as the official trainer: Uniform), embeds the images, and every client classifies with its own Gaussian processes
// on those embeddings, fitted to its own data.
//
// The model's output is the embedding: its head, built with EmbedDim outputs (Shape), is the
// official backbone's linear embed_dim layer (on the ConvNet, CNNTarget exactly: conv,
// pool, conv, pool, FC 120, FC 84, linear 84 → 84). Every parameter is shared.
//
// A client's classifier (engine/gp): its classes form a binary tree, split top-down by
// 2-means on the class-mean embeddings; each inner node v holds a binary GP f_v ~ GP(0, k)
// with P(left | x) = σ(f_v(x)), trained on the node's samples, and
//
//	k(x, x') = s·exp(−‖x̂ − x̂'‖²/(2ℓ²)),  x̂ = φ(x)/‖φ(x)‖,
//	P(y = c | x) = Π_{v on the path to c} σ(±f_v(x)).
//
// The logistic likelihood is augmented with Pólya-Gamma variables, σ(f)^y(1 − σ(f))^{1−y}
// ∝ e^{κf}·E_{ω~PG(1,0)}[e^{−ωf²/2}], κ = y − ½, so that given ω the posterior is Gaussian,
// f | ω, y ~ N(Σ̃κ, Σ̃) with Σ̃ = (K⁻¹ + Ω)⁻¹, and ω_i | f ~ PG(1, f_i); Gibbs sampling
// alternates the two (D parallel chains, S sweeps; the PG draws by Devroye's exact method).
// Given a chain's ω_d the predictive at x* is Gaussian, μ* = k*ᵀ(K + Ω_d⁻¹)⁻¹Ω_d⁻¹κ and
// σ²* = k** − k*ᵀ(K + Ω_d⁻¹)⁻¹k*, and P(left | x*) = (1/D)·Σ_d ∫σ(f)N(f; μ*, σ²*)df by
// 20-point Gauss–Hermite quadrature.
//
// Training (TrainHooks.Loss): each local step, each client's batch is embedded, and the loss is
// the sum over the tree's inner nodes of the predictive loss (the official default,
// --objective predictive_likelihood): the node's samples of each branch are split at
// random, PredictRatio of them held out, the GP is conditioned on the rest through D
// chains of S sweeps, and the loss is the held-out samples' mean −log(P(branch | x) +
// 1e-12). Gradients reach φ through the kernel only (ω is a sample, as the official
// code's numpy draw). Objective "marginal" instead minimizes the node's negative augmented
// marginal likelihood per sample, −(1/(nD))·Σ_d log N(Ω_d⁻¹κ; 0, K + Ω_d⁻¹) plus the
// ω terms (Fisher's identity makes its expected gradient the marginal likelihood's).
//
// Evaluation (EvalHooks.Embed, Condition and Predict): each client embeds all its training samples, builds
// its tree from their class means, samples every node's posterior (EvalDraws chains of
// EvalSteps sweeps), and predicts every test sample with the path products above; its
// logits are log(P(c | x) + 1e-12), 0 probability for a class it has no training sample of.
//
// How the GP is computed. The native binding has no Cholesky factorization, triangular
// solve or inverse, so the GPs are computed on the host in float64 (engine/gp, over
// gonum): they are small (a batch's samples in training, one client's training set at
// evaluation). The host returns each client's loss and G = ∂L/∂K, the gradient with
// respect to the batch's kernel matrix K_ij = k(x_i, x_j) that reverse mode through the
// Cholesky factor of K + Ω⁻¹ yields; the device recomputes K from the embeddings with
// autograd ops (normalize, batched matmul, exp) and the client's loss is
// L + Σ_ij G_ij K_ij − stopgrad(Σ_ij G_ij K_ij): its value is L and its gradient with
// respect to φ is exactly Σ_ij G_ij ∂K_ij/∂φ. The step waits for the host (HostStep: no
// CUDA graph capture). Clients, and each GP's chains, run in parallel on the host's cores.
// Costs: a node of n training samples costs D·(S+1) factorizations of n×n (n³/3 flops
// each) per step or evaluation, and an evaluation holds, for every client of its chunk,
// each node's D factors until the next chunk (8·D·n² bytes: 240 MB at n = 1000, D = 30).
//
// Deviations from the official code, each deliberate:
//   - Batches: the official trainer concatenates all of a client's training batches into
//     one step, --inner-steps times per round (1 by default; its CIFAR-10 script passes
//     3); here a step is one batch of the run's plan, so the tree and the held-out split
//     are drawn per batch from the batch's classes (the official tree, built once per
//     round from the embeddings before the round's steps, can have nodes a batch lacks; it
//     skips them). train.batch at least the largest client's sample count gives the
//     official full steps, train.epochs of them per round (the tree rebuilt at each).
//   - Quadrature: the official code takes exp(E[log σ(f)]) (gpytorch's quadrature of
//     logsigmoid) for the left branch and one minus it for the right; here both branches
//     take the expectation E[σ(±f)] the predictive integral defines.
//   - f | ω is drawn by pathwise conditioning, f₀ + K(K + Ω⁻¹)⁻¹(Ω⁻¹κ − f₀ − ε) with
//     f₀ ~ N(0, K), ε ~ N(0, Ω⁻¹), instead of factorizing Σ̃ (the same law).
//   - 2-means: Lloyd's iterations from Restarts k-means++ starts, the least within-cluster
//     sum of squares kept (the official sklearn KMeans, n_init 50, random_state 42); the
//     branch with the smallest class id is the left one.
//   - A node whose split leaves no held-out or no training sample (a branch of one sample)
//     adds no loss (the official mean over no sample is NaN; with whole-client batches it
//     does not arise). A predictive variance that rounds below 1e-10 is clamped there.
//   - The kernel's s and ℓ and the zero mean are fixed (OutputScale, LengthScale): the
//     official code rebuilds the GPs every round and its optimizer holds only the
//     network's parameters, so they stay at their initial 8 and 1 as well.
//   - Randomness: a client's draws in a step come from a seed drawn from its own dropout
//     stream (so stacked and one-at-a-time training draw the same), at evaluation from
//     (seed, "pfedgp/eval", client), the same at every evaluation.
//
// Followed as settings (each default the official trainer's): the server's uniform mean
// over the round's clients (Uniform), the loss scaler (LossScaler) and the gradient-norm
// clip at 50 before every step (Clip). The inducing-point variant pFedGP-IP-data is
// PFedGPIP (pfedgp_ip.go); pFedGP-IP-compute is not implemented.
type PFedGP struct {
	PFedGPConfig

	classes int
	seed    uint64
	h       gp.Hermite
	fitted  fittedGPs
}

// PFedGPConfig is pFedGP's setting; the defaults (DefaultPFedGP) are the official
// trainer's.
type PFedGPConfig struct {
	EmbedDim     int64   // the embedding width (the head's outputs); --embed-dim 84
	OutputScale  float64 // s; --outputscale 8
	LengthScale  float64 // ℓ; --lengthscale 1
	Draws        int     // Gibbs chains in training; --num-gibbs-draws-train 20
	Steps        int     // Gibbs sweeps in training; --num-gibbs-steps-train 5
	EvalDraws    int     // at evaluation; --num-gibbs-draws-test 30
	EvalSteps    int     // at evaluation; --num-gibbs-steps-test 5
	Objective    string  // "predictive" (predictive_likelihood, the default) or "marginal"
	PredictRatio float64 // the held-out fraction of each branch; --predict-ratio 0.5
	Inducing     int     // pfedgp-ip: inducing inputs per class; --num-inducing-points 100
	// Uniform weighs the round's clients equally in the server's mean (ServerHooks.Weights): the
	// official trainers divide the summed parameters by --num-client-agg
	// (trainer.py, trainer_ip.py: params[n] = p / args.num_client_agg); false weighs them by
	// their sample counts m_k/M, as the other algorithms.
	Uniform bool
	// LossScaler multiplies every client's loss (its gradient and the reported value)
	// before the step, as the official `loss *= args.loss_scaler`; --loss-scaler 1 (its
	// pFedGP-IP-data CIFAR-10 script passes 2). Must be > 0.
	LossScaler float64
	// Clip bounds the L2 norm of each client's gradient at every step, as the official
	// clip_grad_norm_(net.parameters(), 50) before optimizer.step(); 0: no clipping.
	Clip float64
}

// DefaultPFedGP is the official trainer's setting (experiments/heterogeneous_class_dist/
// trainer.py defaults; the kernel's jitter 1e-3 is the official GP model's).
func DefaultPFedGP() PFedGPConfig { return PFedGPSettings{}.Default().config() }

// pfedgpJitter is the official GPModel's jitter_val.
const pfedgpJitter = 1e-3

// twoMeansRestarts is the official KMeans's n_init.
const twoMeansRestarts = 50

// gpConfig is the host classifier's setting for training (eval false) or evaluation.
func (p *PFedGP) gpConfig(eval bool) gp.Config {
	c := gp.Config{Kernel: gp.Kernel{OutputScale: p.OutputScale, LengthScale: p.LengthScale, Jitter: pfedgpJitter},
		Draws: p.Draws, Steps: p.Steps, PredictRatio: p.PredictRatio, Restarts: twoMeansRestarts}
	if eval {
		c.Draws, c.Steps = p.EvalDraws, p.EvalSteps
	}
	if p.Objective == "marginal" {
		c.Objective = gp.Marginal
	}
	return c
}

// Validate reports a setting that cannot run, naming its config key (PFedGPSettings).
func (c PFedGPConfig) Validate() error {
	if err := c.settings().Validate(); err != nil {
		return err
	}
	p := PFedGP{PFedGPConfig: c}
	return p.gpConfig(false).Validate()
}

// Name is "pfedgp".
func (*PFedGP) Name() string { return "pfedgp" }

// Personal is false: the network is shared; the GPs are rebuilt from the client's data.
func (*PFedGP) Personal(*model.Param) bool { return false }

// PrepareHooks make the model's head the embedding (Shape) and read the run's classes and
// seed (Bind).
func (p *PFedGP) PrepareHooks() fl.PrepareHooks { return fl.PrepareHooks{Shape: p.Shape, Bind: p.Bind} }

// TrainHooks train on the GP loss (Loss), computed on the host (HostStep), with clipped
// gradients (Optimizer).
func (p *PFedGP) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Loss: p.Loss, Optimizer: p.Optimizer, HostStep: true}
}

// ServerHooks weigh the round's clients uniformly unless Uniform is false (Weights).
func (p *PFedGP) ServerHooks() fl.ServerHooks { return fl.ServerHooks{Weights: p.ClientWeights} }

// EvalHooks predict with each client's GP classifier, fitted to its training samples.
func (p *PFedGP) EvalHooks() fl.EvalHooks {
	return fl.EvalHooks{Embed: p.Embed, Condition: p.Condition, Predict: p.Predict}
}

// ClientWeights are the server's weights of the round's clients: uniform, as
// the official trainers' mean over --num-client-agg clients, unless Uniform is false
// (then m_k/M).
func (p *PFedGP) ClientWeights(sizes []int) []float64 {
	if !p.Uniform {
		return fl.Weights(sizes)
	}
	w := make([]float64, len(sizes))
	for i := range w {
		w[i] = 1 / float64(len(sizes))
	}
	return w
}

// Optimizer is the run's SGD after clipping each client's gradient norm at Clip when set
// as the official trainers clip before every step.
func (p *PFedGP) Optimizer(_ int, c fl.SGDConfig) fl.Optimizer {
	if p.Clip > 0 {
		return &normClipped{max: p.Clip, Optimizer: fl.NewSGD(c)}
	}
	return fl.NewSGD(c)
}

// scaled is a client's loss times LossScaler (the official --loss-scaler).
func (p *PFedGP) scaled(s *cuda.Scope, loss *cuda.Tensor) *cuda.Tensor {
	if p.LossScaler == 1 {
		return loss
	}
	return s.MulScalar(loss, p.LossScaler)
}

// Shape makes the model's head the embedding layer: EmbedDim outputs instead of the
// classes.
func (p *PFedGP) Shape(s model.Spec) (model.Spec, error) {
	pr, err := model.Lookup(s.Preset)
	if err != nil {
		return s, err
	}
	if !pr.Takes("Classes") {
		return s, fmt.Errorf("algorithm pfedgp embeds images with an image classifier whose head becomes the embedding; model %s has no such head", s.Preset)
	}
	s.Classes = p.EmbedDim
	return s, nil
}

// Bind reads the number of classes and the run's seed.
func (p *PFedGP) Bind(env fl.Env) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if env.Fed.Train == nil {
		return fmt.Errorf("pfedgp classifies labelled images; the %q partition has none", env.Fed.Config.Method)
	}
	h, err := gp.NewHermite(gp.HermitePoints)
	if err != nil {
		return err
	}
	p.classes, p.seed, p.h = env.Fed.Train.Classes, env.Seed, h
	p.fitted.drop()
	return nil
}

// Close drops the evaluation's classifiers.
func (p *PFedGP) Close() error {
	p.fitted.drop()
	return nil
}

// deviceKernel is the batch's kernel K_ij = s·exp((x̂_i·x̂_j − 1)/ℓ²) [K, B, B] from the
// embeddings z [K, B, D] with autograd ops; x̂ = z/max(‖z‖, 1e-12) as F.normalize (the
// clamp on ‖z‖² keeps a zero row's gradient finite).
func (p *PFedGP) deviceKernel(s *cuda.Scope, z *cuda.Tensor) *cuda.Tensor {
	norm := s.Sqrt(s.Clamp(s.Sum(s.Mul(z, z), true, 2), 1e-24, math.Inf(1)))
	x := s.Div(z, norm)
	dot := s.BMM(x, s.Transpose(x, 1, 2))
	return s.MulScalar(s.Exp(s.DivScalar(s.AddScalar(dot, -1), p.LengthScale*p.LengthScale)), p.OutputScale)
}

// Loss is each client's GP loss on its batch: see the type's comment.
func (p *PFedGP) Loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	z := m.Forward(s, b.X, pass) // [K, B, E]
	if s.Err() != nil {
		return nil
	}
	p.fitted.drop() // an evaluation's classifiers are done with once training goes on
	hb := hostBatch(s, z, b, pass, "pfedgp")
	if hb == nil {
		return nil
	}
	k, bs := int(z.Size(0)), int(z.Size(1))
	cfg := p.gpConfig(false)
	losses := make([]float64, k)
	g := make([]float64, k*bs*bs)
	err := gp.ForEach(k, func(r int) error {
		if len(hb.feat[r]) == 0 {
			return nil
		}
		l, gr, err := gp.Loss(cfg, p.h, hb.feat[r], hb.labels[r], rng.New(rng.Key{Seed: hb.seeds[r], Purpose: "pfedgp/step", Round: -1, Client: -1}))
		if err != nil {
			return fmt.Errorf("client %d: %w", b.Clients[r], err)
		}
		losses[r] = l
		for i, a := range hb.pos[r] {
			for j, c := range hb.pos[r] {
				g[(r*bs+a)*bs+c] = gr.At(i, j)
			}
		}
		return nil
	})
	if err != nil {
		s.Fail(fmt.Errorf("fl: pfedgp: %w", err))
		return nil
	}
	return p.surrogate(s, z, g, bs, losses)
}

// surrogate is the clients' (scaled) losses [K] with the host's gradient: their values
// losses plus Σ_ij G_ij K_ij − stopgrad(Σ_ij G_ij K_ij), K [K, n, n] the kernel the device
// computes from rows [K, n, E] and G the host's ∂L/∂K, g [K, n, n]; its gradient with
// respect to the rows is exactly Σ_ij G_ij ∂K_ij/∂rows.
func (p *PFedGP) surrogate(s *cuda.Scope, rows *cuda.Tensor, g []float64, n int, losses []float64) *cuda.Tensor {
	dt, dev := rows.DType(), rows.Device()
	gt := s.To(cuda.FromSlice(s, dev, g, rows.Size(0), int64(n), int64(n)), dt)
	sur := s.Sum(s.Mul(gt, p.deviceKernel(s, rows)), false, 1, 2) // [K]
	value := s.To(cuda.FromSlice(s, dev, losses), dt)
	return p.scaled(s, s.Add(value, s.Sub(sur, s.Detach(sur))))
}

// Embed is the model's output, the embedding.
func (p *PFedGP) Embed(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor {
	return m.Forward(s, x, &model.Pass{})
}

// Condition fits each row's GP classifier to its client's embedded training samples. Rows of the same client (a chunk's padding) share one fit.
func (p *PFedGP) Condition(s *cuda.Scope, m model.Model, ids []int, train fl.Embedded) error {
	feat, labels, _, err := hostRows(train.Feat, train.Y, train.Mask)
	if err != nil {
		return err
	}
	cfg := p.gpConfig(true)
	fitted, err := fitClients(ids, feat, func(r int) (*gp.Classifier, error) {
		return gp.Fit(cfg, p.h, feat[r], labels[r], rng.New(rng.Key{Seed: p.seed, Purpose: "pfedgp/eval", Round: -1, Client: ids[r]}))
	})
	p.fitted.set(m, fitted)
	return err
}

// Predict is each row's GP prediction on x [K, B, ...]: log(P(c | x) + 1e-12)
// [K, B, classes].
func (p *PFedGP) Predict(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor {
	z := p.Embed(s, m, x)
	if s.Err() != nil {
		return nil
	}
	k, b := int(z.Size(0)), int(z.Size(1))
	fitted := p.fitted.get(m)
	if len(fitted) != k {
		s.Fail(fmt.Errorf("fl: pfedgp: %d rows to predict, %d conditioned (Condition first)", k, len(fitted)))
		return nil
	}
	all := s.Ones(cuda.Float32, z.Device(), int64(k), int64(b))
	feat, _, _, err := hostRows(z, s.Zeros(cuda.Int64, z.Device(), int64(k), int64(b)), all)
	if err != nil {
		s.Fail(err)
		return nil
	}
	out := make([]float64, k*b*p.classes)
	err = gp.ForEach(k, func(r int) error {
		probs, err := fitted[r].Predict(feat[r], p.classes)
		if err != nil {
			return err
		}
		for i, row := range probs {
			for c, v := range row {
				out[(r*b+i)*p.classes+c] = math.Log(v + 1e-12)
			}
		}
		return nil
	})
	if err != nil {
		s.Fail(fmt.Errorf("fl: pfedgp: %w", err))
		return nil
	}
	return s.To(cuda.FromSlice(s, z.Device(), out, int64(k), int64(b), int64(p.classes)), z.DType())
}
