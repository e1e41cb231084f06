package algo

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/hyper"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// FedTP is Learn-to-Personalize (Li et al., "FedTP: Federated Learning by Transformer
// Personalization", §III-C, Algorithm 1): a hypernetwork on the server generates every
// client's self-attention Q/K/V projections from its embedding; the clients train them with
// everything else; the server moves the hypernetwork by the weighted change of the generated
// weights (ΔW_i = W_i⁰ − W_iᴱ, one vector-Jacobian product for the round's clients), and
// averages all other parameters as FedAvg does.
//
// Roles chooses the generated parameters (the paper's Table V ablation: attention Q/K/V,
// MLP, norm layers, or the whole encoder), one hypernetwork head per parameter (for Q/K/V,
// one per block: the fused projection [3·inner, dim]). The extensions of Table VI add a
// personal part: Local roles kept by their clients (FedTP+FedPer: the head) or RoD, FedRoD's
// personal head and balanced-softmax loss (FedTP+FedRoD); KNN mixes a nearest-neighbour
// vote into evaluation (FedTP+KNN).
type FedTP struct {
	Hyper hyper.Config // the hypernetwork; Clients is set from the run; Rank 0: full heads, as the paper
	Roles []model.Role // generated roles; default attention Q/K/V
	All   bool         // generate every trainable parameter, whatever its role (pFedHN)
	Local []model.Role // roles kept by each client (FedTP+FedPer: head)
	RoD   bool         // FedTP+FedRoD
	KNN   fl.KNN       // FedTP+KNN: evaluation mixes in a vote of each client's nearest training features

	net *hyper.Net
	rod *FedRoD
}

// Name is "fedtp", or its extension's name.
func (f *FedTP) Name() string {
	switch {
	case f.KNN.K > 0:
		return "fedtp-knn"
	case f.RoD:
		return "fedtp-rod"
	case slices.Contains(f.Local, model.RoleHead):
		return "fedtp-per"
	}
	return "fedtp"
}

func (f *FedTP) roles() []model.Role {
	if len(f.Roles) == 0 {
		return []model.Role{model.RoleAttnQKV}
	}
	return f.Roles
}

// PrepareHooks build the hypernetwork (Bind) and, with RoD, add FedRoD's personal head
// (Wrap).
func (f *FedTP) PrepareHooks() fl.PrepareHooks {
	h := fl.PrepareHooks{Bind: f.Bind}
	if f.RoD {
		h.Wrap = f.rodPart().Wrap
	}
	return h
}

// TrainHooks are FedRoD's loss and split update with RoD (its personal head on a plain
// SGD), else the defaults.
func (f *FedTP) TrainHooks() fl.TrainHooks {
	if !f.RoD {
		return fl.TrainHooks{}
	}
	rod := f.rodPart()
	return fl.TrainHooks{Loss: rod.Loss, Optimizer: rod.Optimizer}
}

// GenerateHooks are the hypernetwork's.
func (f *FedTP) GenerateHooks() fl.GenerateHooks {
	return fl.GenerateHooks{Generated: f.Generated, Generate: f.Generate, LearnSum: f.LearnSum, LearnApply: f.LearnApply,
		Tune: f.TuneParams, Net: f.Net, ParamCount: f.HyperParams}
}

// ServerHooks checkpoint the hypernetwork (State).
func (f *FedTP) ServerHooks() fl.ServerHooks { return fl.ServerHooks{State: f.State} }

// EvalHooks mix in the KNN vote (K = 0: off).
func (f *FedTP) EvalHooks() fl.EvalHooks { return fl.EvalHooks{KNN: f.KNN} }

// Generated reports whether the hypernetwork makes p: a trainable parameter of the
// generated roles (every trainable parameter with All). Buffers are never generated.
func (f *FedTP) Generated(p *model.Param) bool {
	return !p.Buffer && (f.All || slices.Contains(f.roles(), p.Role))
}

// Personal is true for the Local roles and, with RoD, the personal head.
func (f *FedTP) Personal(p *model.Param) bool {
	return slices.Contains(f.Local, p.Role) || (f.RoD && p.Role == model.RolePersonalHead)
}

func (f *FedTP) rodPart() *FedRoD {
	if f.rod == nil {
		f.rod = &FedRoD{}
	}
	return f.rod
}

// targets are the model's generated parameters, in its order. A parameter a fresh model
// builds at a constant (normalization scales at 1) is generated around that constant: a
// fresh hypernetwork's outputs are near 0, and norm scales near 0 switch their layers off
// (pFedHN generating every weight of a ViT did not learn before this). The official FedTP
// code generates only Q/K/V, which no offset touches.
func (f *FedTP) targets(m model.Model) []hyper.Target {
	var targets []hyper.Target
	for _, p := range m.Params().List {
		if f.Generated(p) {
			off, _ := p.ConstantInit()
			targets = append(targets, hyper.Target{Name: p.Name, Shape: p.Shape, Offset: off})
		}
	}
	return targets
}

// HyperParams is the number of parameters the hypernetwork would hold (embeddings,
// trunk and heads; the optimizer's momentum holds as many again) for a run of clients
// clients on a model shaped as m, without building it (in float64: absurd sizes cannot
// overflow).
func (f *FedTP) HyperParams(m model.Model, clients int) float64 {
	cfg := f.Hyper
	cfg.Clients = clients
	return hyper.ParamCount(cfg, f.targets(m))
}

// Bind builds the hypernetwork for the run's clients and the model's generated parameters,
// initialized from the run's ("hyper/init") stream.
func (f *FedTP) Bind(env fl.Env) error {
	f.Close()
	targets := f.targets(env.Model)
	if len(targets) == 0 {
		return fmt.Errorf("model %s has no parameter of the generated roles %v", env.Model.Name(), f.roles())
	}
	cfg := f.Hyper
	cfg.Clients = len(env.Fed.Part.Train)
	g, err := cuda.NewGenerator(rng.Derive(rng.Key{Seed: env.Seed, Purpose: "hyper/init", Round: -1, Client: -1}), env.Device)
	if err != nil {
		return err
	}
	defer g.Close()
	if f.net, err = hyper.New(cfg, targets, env.Device, env.DType, g); err != nil {
		return err
	}
	if f.RoD {
		return f.rodPart().Bind(env)
	}
	return nil
}

// Net is the hypernetwork (nil before Bind).
func (f *FedTP) Net() *hyper.Net { return f.net }

// Close frees the hypernetwork.
func (f *FedTP) Close() error {
	if f.net != nil {
		f.net.Close()
		f.net = nil
	}
	if f.rod != nil {
		f.rod.Close()
	}
	return nil
}

// Generate runs the hypernetwork for the clients rows.
func (f *FedTP) Generate(s *cuda.Scope, rows *cuda.Tensor) []*cuda.Tensor {
	return f.net.Generate(s, rows)
}

// LearnSum is the gradient of Algorithm 1's server update over the given clients,
// Σ_i (m_i/M)(∂W_i/∂φ)ᵀ ΔW_i with ΔW_i = W_i⁰ − W_iᴱ (across processes, each rank's
// clients' part, all-reduced).
func (f *FedTP) LearnSum(s *cuda.Scope, generated, trained []*cuda.Tensor, weights *cuda.Tensor) []*cuda.Tensor {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	delta := make([]*cuda.Tensor, len(trained))
	for i, w := range trained {
		delta[i] = s.Sub(s.Detach(generated[i]), w)
	}
	s.SetGradEnabled(true)
	g := f.net.Gradient(s, generated, delta, weights)
	s.SetGradEnabled(grad)
	return g
}

// LearnApply is the hypernetwork's optimizer step with the summed gradient:
// φ ← φ − β·sum (Algorithm 1's server update).
func (f *FedTP) LearnApply(s *cuda.Scope, sum []*cuda.Tensor) {
	if s.Err() == nil {
		f.net.Step(s, sum)
	}
	for _, t := range sum {
		t.Close() // hidden × the generated parameters each: free them now, not at the round's end
	}
}

// TuneParams are the hypernetwork parameters a novel client fine-tunes (paper Fig. 8):
// the embedding table (TuneEmbedding; only the tuned clients' rows receive gradient) or
// every parameter (TuneHypernetwork).
func (f *FedTP) TuneParams(mode string) ([]*cuda.Tensor, error) {
	switch mode {
	case fl.TuneEmbedding:
		return f.net.Params()[:1], nil
	case fl.TuneHypernetwork:
		return f.net.Params(), nil
	}
	return nil, fmt.Errorf("%s: no tune mode %q (want %q or %q)", f.Name(), mode, fl.TuneEmbedding, fl.TuneHypernetwork)
}

// State is the hypernetwork's parameters and momentum buffers.
func (f *FedTP) State() ([]string, []*cuda.Tensor) {
	var names []string
	for _, n := range f.net.Names() {
		names = append(names, "hyper/"+n)
	}
	for _, n := range f.net.Names() {
		names = append(names, "hyper_momentum/"+n)
	}
	return names, append(append([]*cuda.Tensor(nil), f.net.Params()...), f.net.Buffers()...)
}

// fedTP is the registry's FedTP: algorithm.generate's roles and algorithm.hyper's sizes,
// the rank as algorithm.hyper.rank sets it.
func fedTP(o fl.Options) *FedTP {
	f := &FedTP{Roles: o.Generate, Hyper: o.Hyper}
	if o.Rank != nil {
		f.Hyper.Rank = *o.Rank
	}
	return f
}
