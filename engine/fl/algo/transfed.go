package algo

import (
	"fmt"
	"slices"

	"pfl/engine/fl"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// TransFed is TransFed (Ashraf, Mir and Gillani, "TransFed: A way to epitomize Focal
// Modulation using Transformer-based Federated Learning", WACV 2024, §3.3, Algorithm 1):
// FedTP's learn-to-personalize on a FocalNet. A hypernetwork on the server generates every
// client's focal-modulation projections from its embedding, P_i = h(φ; z_i) (Eq. 6); the
// clients train them with everything else by SGD (Eq. 7); the server averages the other
// parameters, ξ̄ = Σ_i (m_i/S) ξ_i (Eq. 3), and moves φ and every z_i by the weighted
// change of the projections, Σ_i (m_i/M) (∇_φ P_i)ᵀ ΔP_i with ΔP_i = P_i⁰ − P_iᴱ
// (Eq. 8–11), one vector-Jacobian product for the round's clients followed by the
// hypernetwork's SGD step: FedTP's machinery (FedTP, engine/hyper) throughout.
//
// What the paper leaves open, pfl chooses:
//   - What is generated: every block's focal-modulation layer, f (role focal_f, Linear
//     C → 2C + L + 1: the query, the context and the L + 1 gates), the depthwise context
//     convolutions (focal_ctx), the modulator h (focal_h, a 1×1 convolution) and the output
//     projection proj (focal_proj): exactly what Vanilla customized-T (vanilla-c-t) keeps
//     local. The paper compares the two ways of tailoring the same layers (§3.2 keeps "local
//     focal modulation", §3.3 generates it; Table 3's row "Focal Modulation", §4.2.4's
//     "TransFed and Vanilla customized-T" differ only by the hypernetwork), so TransFed
//     generates what Vanilla-T keeps. Its text also speaks of "client-specific queries,
//     keys and values" and P = [P^Q, P^K, P^V] (§3.3), FedTP's wording: a focal-modulation
//     layer has no keys or values, and f alone is the layer's projection to queries;
//     algorithm.generate: [focal_f] generates f alone (partial with local_roles [focal_f]
//     is its vanilla counterpart), and lists other parts of the paper's Table 3 (mlp, norm,
//     encoder). Measured on a small FocalNet (configs/transfed-generated-fmnist.yaml):
//     generating f alone matched FedAvg-T for 300 rounds, because with FocalNet's
//     initialization the modulation branch's output, and so f's gradient, is tiny;
//     generating the whole layer personalized.
//   - The hypernetwork. The paper's is "simple fully connected layers, where each
//     transformer block's last layer is unique"; pfl uses FedTP's: a client embedding
//     128 wide (the paper's novel-client study uses 32: algorithm.hyper.embed), a trunk of
//     4 Linear layers 150 wide with ReLUs between them, one head per generated parameter,
//     PyTorch's default initialization.
//   - Head sizes. Full heads (Linear(hidden → out·in)) while they hold at most 2^28
//     parameters, else low-rank heads of rank 32, W = W0 + U V (hyper.RankAuto; the
//     authors' follow-up names "low-rank hypernetwork conditioning", pfl defines it in
//     hyper.Config.Rank). The 32×32 FocalNet's focal-modulation heads hold 85 M
//     parameters (its f heads alone 40 M) and stay full; FocalNet-T's f heads alone would
//     hold 655 M and are low-rank. algorithm.hyper.rank sets the rank (0: full heads).
//   - The hypernetwork's optimizer. Algorithm 1 writes plain gradient steps with rate β
//     (0.01 in §4.1.3); pfl uses FedTP's: SGD at β (algorithm.hyper.lr, default train.lr),
//     momentum 0.9 and weight decay 1e-3, as FedTP's official code.
//
// Everything else is FedTP's: every round and every evaluation generates the clients'
// projections afresh; the novel-client study fine-tunes the embedding or the whole
// hypernetwork; a run writes the client embeddings (the paper's Fig. 4 t-SNE).
type TransFed struct {
	FedTP
}

// transFed is the registry's TransFed: algorithm.generate's roles (default the whole
// focal-modulation layer, model.FocalRoles) and algorithm.hyper's sizes, with the rank RankAuto
// unless set.
func transFed(o fl.Options) *TransFed {
	t := &TransFed{FedTP{Roles: o.Generate, Hyper: o.Hyper}}
	if len(t.Roles) == 0 {
		t.Roles = model.FocalRoles()
	}
	switch {
	case o.Rank != nil:
		t.Hyper.Rank = *o.Rank
	case t.Hyper.Rank == 0:
		t.Hyper.Rank = hyper.RankAuto
	}
	return t
}

// Name is "transfed".
func (t *TransFed) Name() string { return "transfed" }

// PrepareHooks are FedTP's with TransFed's Shape and Bind.
func (t *TransFed) PrepareHooks() fl.PrepareHooks {
	h := t.FedTP.PrepareHooks()
	h.Shape, h.Bind = t.Shape, t.Bind
	return h
}

// Shape refuses a model that is not a FocalNet before anything is built.
func (t *TransFed) Shape(s model.Spec) (model.Spec, error) { return s, needFocalNet(t.Name(), s) }

// Bind refuses a model without focal modulation, then builds the hypernetwork as FedTP.
func (t *TransFed) Bind(env fl.Env) error {
	if err := needFocal(t.Name(), env.Model); err != nil {
		return err
	}
	return t.FedTP.Bind(env)
}

// needFocalNet refuses a spec whose preset is not a FocalNet.
func needFocalNet(name string, s model.Spec) error {
	p, err := model.Lookup(s.Preset)
	if err != nil {
		return err
	}
	if !p.IsFocalNet() {
		return fmt.Errorf("algorithm %s personalizes focal modulation and needs a FocalNet; model %s has none (choose %s)", name, s.Preset, focalPresets())
	}
	return nil
}

// needFocal refuses a model without focal-modulation parameters.
func needFocal(name string, m model.Model) error {
	for _, p := range m.Params().List {
		if slices.Contains(model.FocalRoles(), p.Role) {
			return nil
		}
	}
	return fmt.Errorf("algorithm %s personalizes focal modulation and needs a FocalNet; model %s has no focal-modulation layer (choose %s)", name, m.Name(), focalPresets())
}

// focalPresets lists the FocalNet presets, "a, b or c".
func focalPresets() string {
	var names []string
	for _, p := range model.Presets() {
		if p.IsFocalNet() {
			names = append(names, p.Name)
		}
	}
	if len(names) < 2 {
		return fmt.Sprint(names)
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " or " + names[len(names)-1]
}

// VanillaCustomizedT keeps every block's focal modulation (f, the context convolutions, h
// and proj) with its client and averages everything else: TransFed's "Vanilla customized-T"
// (§3.2, Eq. 3–5; Table 2's "Vanilla-T"), which "retained local focal modulation while
// utilizing FedAvg for server-side aggregation of other parameters": the parameters
// TransFed generates by default. §4.2.4 describes it as keeping the projections P_i local;
// the split of f alone (what TransFed generates with algorithm.generate [focal_f]) is
// algorithm partial with local_roles [focal_f].
func VanillaCustomizedT() fl.Strategy {
	return focalRoleSet{roleSet{name: "vanilla-c-t", roles: model.FocalRoles()}}
}

// focalRoleSet is a roleSet that needs a FocalNet.
type focalRoleSet struct{ roleSet }

// PrepareHooks refuse a model that is not a FocalNet (Shape) or has no focal modulation
// (Bind).
func (f focalRoleSet) PrepareHooks() fl.PrepareHooks {
	return fl.PrepareHooks{Shape: f.Shape, Bind: f.Bind}
}

// Shape refuses a model that is not a FocalNet before anything is built.
func (f focalRoleSet) Shape(s model.Spec) (model.Spec, error) { return s, needFocalNet(f.name, s) }

// Bind refuses a model without focal modulation (which would keep nothing local).
func (f focalRoleSet) Bind(env fl.Env) error { return needFocal(f.name, env.Model) }
