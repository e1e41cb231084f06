#!/usr/bin/python3
"""Runs the official pFedGP trainer's GP code (IdanAchituve/pFedGP: pFedGP/Learner.py,
tree.py, node.py, pFedGP_full_data.py, imported unmodified from a checkout) on fixed
inputs and records what it computed, for engine/gp's TestOfficialTrainerOnFixedInputs to
compute the same with pfl's GP (engine/gp) and compare: the training loss and its gradient,
and the evaluation's class probabilities, given the same features, labels, kernel
hyper-parameters, class tree, held-out splits and Pólya-Gamma draws ω. The maths both
sides share (the RBF kernel, the Pólya-Gamma sampler, Gauss–Hermite quadrature) is checked
against closed forms elsewhere (standins/check_pfedgp.py, engine/gp's tests); what this
compares is the trainer's own computation on top of it: the tree, the node data, the
κ and stick-breaking convention, the posterior given ω, the predictive distribution, the
losses, the gradients autograd takes through all of it, and the product along the tree.

Get the official code with `git clone https://github.com/IdanAchituve/pFedGP` (the fixture
in the repository was written from commit 38d833cbc5927dd09914ca6b874f15c8cfc3dbcd), then

  /usr/bin/python3 scripts/sbs/pfedgp_fixed_inputs.py --checkout PATH/TO/pFedGP
  scripts/sbs/pfedgp-fixed.sh PATH/TO/pFedGP      (this, then the Go test, verbose)

Setting: 4 classes (labels 0..3, as the trainer's offset labels) of 14, 8, 12 and 10
training and 5 test samples, 8-dimensional features drawn around class means of which classes 0 and 2, and
1 and 3, lie close (so the 2-means split of the root is {0, 2} against {1, 3}); the
trainer's defaults: RBF kernel, outputscale 8, lengthscale 1, jitter 1e-3, Gibbs 20 chains
× 5 steps in training and 30 × 5 in evaluation, predict_ratio 0.5, the predictive
objective (and the marginal one, --objective marginal_likelihood, as a second loss).

From the outside this script only
  (1) puts scripts/sbs/standins first on the import path (gpytorch and pypolyagamma, as
      pfedgp_official.py) and makes float64 torch's default dtype, so that the kernel's
      parameters are float64 too (the trainer computes in its network's float32; comparing
      to rounding needs float64 on both sides),
  (2) wraps instance methods to record, never to change, what the official code draws: each
      node's train_test_split (its held-out samples) and gibbs_sample (its ω),
  (3) records two quadratures: the official one (exp E[log σ(f)] for the left branch, one
      minus it for the right) and, by replacing each node's quadrature object (a gpytorch
      stand-in, not the trainer's code) with one returning log E[σ(f)], pfl's E[σ(f)]
      (docs/fidelity.md: a deliberate difference); the comparison uses the second, and the
      first shows how far the design difference moves the numbers.

The same for pFedGP-IP-data (Learner.pFedGPIPDataLearner, trainer_ip.py's defaults with
--method pFedGP-data: balance_classes on), with 6 fixed inducing inputs per class.

Output (JSON): the inputs, the official tree (inner nodes breadth-first: classes, left and
right classes, new_to_old[0] being the left branch), and per case (training loss under each
objective; evaluation) each node's member indices, held-out indices, ω, and the official
loss, gradient with respect to the features, and class probabilities.
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
import torch

STANDINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins")
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "gp", "testdata",
                       "pfedgp_official_fixed.json")


class Args:
    """The trainer's GP arguments (experiments/heterogeneous_class_dist/trainer.py defaults)."""
    kernel_function = "RBFKernel"
    num_gibbs_steps_train, num_gibbs_draws_train = 5, 20
    num_gibbs_steps_test, num_gibbs_draws_test = 5, 30
    outputscale_increase, outputscale, lengthscale = "constant", 8.0, 1.0
    predict_ratio = 0.5
    objective = "predictive_likelihood"
    balance_classes = True  # trainer_ip.py's default


class ExpectedSigmoid(torch.nn.Module):
    """Stands where a node's GaussHermiteQuadrature1D stands and returns log E[σ(f)] by the
    same 20-node rule, so that the official torch.exp(quadrature(F.logsigmoid, dist)) is
    E[σ(f)], pfl's predictive integral."""

    def __init__(self, quadrature):
        super().__init__()
        self.q = quadrature

    def forward(self, func, dist):
        return torch.log(self.q(torch.sigmoid, dist))


def inputs(rng):
    """Features and labels: 4 classes of 14, 8, 12 and 10 training and 5 test samples, in 8
    dimensions."""
    centre = rng.normal(size=(2, 8)) * 2.0
    means = [centre[c % 2] + rng.normal(size=8) * 0.7 for c in range(4)]  # 0 near 2, 1 near 3
    def draw(counts):
        x = np.concatenate([means[c] + rng.normal(size=(n, 8)) for c, n in enumerate(counts)])
        y = np.repeat(np.arange(4), counts)
        perm = rng.permutation(len(y))
        return x[perm], y[perm]
    # unequal classes, so that pFedGP-IP-data's prior-ratio correction is not the identity
    return draw([14, 8, 12, 10]) + draw([5, 5, 5, 5])


def row_index(x_all, rows):
    """The positions in x_all of each of rows (rows are copies of x_all's)."""
    out = []
    for r in rows:
        hit = torch.nonzero((x_all == r).all(dim=1)).flatten().tolist()
        if len(hit) != 1:
            raise SystemExit(f"pfedgp_fixed: a node's row matches {len(hit)} input rows")
        out.append(hit[0])
    return out


def tree_nodes(root):
    """Inner nodes breadth-first, as eval_tree_full_path visits them."""
    out, q = [], [root]
    while q:
        n = q.pop(0)
        if n.classes.size(0) < 2:
            continue
        out.append(n)
        q += [n.left_child, n.right_child]
    return out


def record(nodes, x_all):
    """Wraps each node's train_test_split and gibbs_sample to record, per node id, the
    held-out rows and the ω the official code drew."""
    rec = {}
    for n in nodes:
        m, r = n.model, rec.setdefault(n.id, {})
        split, gibbs = m.train_test_split, m.gibbs_sample

        def tts(X, Y, split=split, r=r):
            xt, xh, yt, yh = split(X, Y)
            r["train"], r["held"] = row_index(x_all, xt), row_index(x_all, xh)
            return xt, xh, yt, yh

        def gs(state, gibbs=gibbs, r=r):
            g = gibbs(state)
            r["omega"] = g.omega.detach().tolist()
            r.setdefault("members", row_index(x_all, state.X))
            return g

        m.train_test_split, m.gibbs_sample = tts, gs
    return rec


def learner(Learner, x, y, quadrature):
    """A pFedGPFullLearner with its tree built on (x, y), each node's quadrature official or
    pfl's (ExpectedSigmoid)."""
    gp = Learner(Args(), 4)
    gp.build_base_tree(x, y)
    if quadrature == "pfl":
        for n in tree_nodes(gp.tree.root):
            n.model.quadrature = ExpectedSigmoid(n.model.quadrature)
    return gp


def train_case(Learner, U, x, y, objective, seed):
    """The official training loss (Learner.forward: train_tree, summed over nodes) and its
    gradient with respect to the features, under both quadratures with the same draws."""
    out = {"objective": objective}
    for quad in ("pfl", "official"):
        U.set_seed(seed)  # the same splits and ω under both quadratures
        Args.objective = objective
        xg = x.clone().requires_grad_(True)
        gp = learner(Learner, xg, y, quad)
        rec = record(tree_nodes(gp.tree.root), x)
        loss = gp(xg, y, to_print=False)
        loss.backward()
        out[quad] = {"loss": loss.item(), "grad": xg.grad.tolist()}
        out["nodes"] = out.get("nodes", rec)
        if rec != out["nodes"]:
            raise SystemExit("pfedgp_fixed: the two quadratures' runs drew different splits or ω")
    Args.objective = "predictive_likelihood"
    return out


def eval_case(Learner, U, x, y, xt, yt, seed):
    """The official evaluation (forward_eval with is_first_iter: each node fits and samples
    its chains, then the class probabilities along the tree) under both quadratures."""
    out = {}
    for quad in ("pfl", "official"):
        U.set_seed(seed)
        gp = learner(Learner, x, y, quad)
        rec = record(tree_nodes(gp.tree.root), x)
        with torch.no_grad():
            loss, probs = gp.forward_eval(x, y, xt, yt, is_first_iter=True)
        out[quad] = {"loss": loss.item(), "probs": probs.tolist()}
        out["nodes"] = out.get("nodes", rec)
        if rec != out["nodes"]:
            raise SystemExit("pfedgp_fixed: the two quadratures' evaluations drew different ω")
    return out


def ip_learner(Learner, x, y, xbar, quadrature):
    """A pFedGPIPDataLearner with its tree built on (x, y) and the inducing inputs xbar."""
    gp = Learner(Args(), 4)
    gp.build_base_tree(x, y, xbar)
    if quadrature == "pfl":
        for n in tree_nodes(gp.tree.root):
            n.model.quadrature = ExpectedSigmoid(n.model.quadrature)
    return gp


def ip_cases(Learner, U, x, y, xt, yt, xbar, seed):
    """pFedGP-IP-data (trainer_ip.py --method pFedGP-data, balance_classes on): the training
    loss (each node's GP conditioned on its classes' inducing inputs, every sample of the
    node held out, the prior-ratio correction) and its gradient with respect to the features
    and the inducing inputs; and the evaluation's class probabilities (each node conditioned
    on its samples and its inducing inputs)."""
    rows = torch.cat((x, xbar.reshape(-1, xbar.shape[-1])))  # the samples, then the inducing inputs
    out = {"train": {}, "eval": {}}
    for quad in ("pfl", "official"):
        U.set_seed(seed)
        xg, bg = x.clone().requires_grad_(True), xbar.clone().requires_grad_(True)
        gp = ip_learner(Learner, xg, y, bg, quad)
        rec = record(tree_nodes(gp.tree.root), rows)
        loss = gp(xg, y, bg, to_print=False)
        loss.backward()
        out["train"][quad] = {"loss": loss.item(), "grad": xg.grad.tolist(),
                              "grad_inducing": bg.grad.reshape(-1, bg.shape[-1]).tolist()}
        out["train"]["nodes"] = out["train"].get("nodes", rec)
        if rec != out["train"]["nodes"]:
            raise SystemExit("pfedgp_fixed: the two quadratures' IP runs drew different ω")
        U.set_seed(seed + 1)
        gp = ip_learner(Learner, x, y, xbar, quad)
        rec = record(tree_nodes(gp.tree.root), rows)
        with torch.no_grad():
            loss, probs = gp.forward_eval(x, y, xt, yt, xbar, is_first_iter=True)
        out["eval"][quad] = {"loss": loss.item(), "probs": probs.tolist()}
        out["eval"]["nodes"] = out["eval"].get("nodes", rec)
        if rec != out["eval"]["nodes"]:
            raise SystemExit("pfedgp_fixed: the two quadratures' IP evaluations drew different ω")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", required=True, help="an IdanAchituve/pFedGP checkout")
    ap.add_argument("--commit", default="38d833cbc5927dd09914ca6b874f15c8cfc3dbcd", help="recorded")
    ap.add_argument("--out", default=FIXTURE)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    checkout = os.path.abspath(a.checkout)
    if not os.path.isfile(os.path.join(checkout, "pFedGP", "pFedGP_full_data.py")):
        sys.exit(f"pfedgp_fixed: --checkout {a.checkout}: no pFedGP/pFedGP_full_data.py")
    sys.dont_write_bytecode = True
    warnings.filterwarnings("ignore", message="torch.cholesky is deprecated")  # the official code's call
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    sys.path[:0] = [STANDINS, checkout]
    import utils as U  # the checkout's
    from pFedGP.Learner import pFedGPFullLearner, pFedGPIPDataLearner

    rng = np.random.default_rng(a.seed)
    x, y, xt, yt = inputs(rng)
    # inducing inputs, 6 per class, near their class's training mean (as trained ones would be)
    xbar = np.stack([x[y == c].mean(0) + 0.5 * rng.normal(size=(6, x.shape[1])) for c in range(4)])
    x, xt, xbar = torch.tensor(x), torch.tensor(xt), torch.tensor(xbar)
    y, yt = torch.tensor(y), torch.tensor(yt)
    U.set_seed(a.seed)
    tree = learner(pFedGPFullLearner, x, y, "official").tree
    nodes = [{"id": n.id, "classes": n.classes.tolist(), "left": sorted(int(c) for c in n.new_to_old[0]),
              "right": sorted(int(c) for c in n.new_to_old[1])} for n in tree_nodes(tree.root)]
    fixture = {
        "source": f"IdanAchituve/pFedGP {a.commit}, by scripts/sbs/pfedgp_fixed_inputs.py --seed {a.seed}",
        "kernel": {"outputscale": Args.outputscale, "lengthscale": Args.lengthscale, "jitter": 1e-3},
        "hermite": 20, "predict_ratio": Args.predict_ratio,
        "x": x.tolist(), "y": y.tolist(), "x_test": xt.tolist(), "y_test": yt.tolist(),
        "tree": nodes,
        "train_predictive": train_case(pFedGPFullLearner, U, x, y, "predictive_likelihood", a.seed + 1),
        "train_marginal": train_case(pFedGPFullLearner, U, x, y, "marginal_likelihood", a.seed + 2),
        "eval": eval_case(pFedGPFullLearner, U, x, y, xt, yt, a.seed + 3),
        "inducing": xbar.reshape(-1, xbar.shape[-1]).tolist(), "inducing_per_class": xbar.shape[1],
        "ip": ip_cases(pFedGPIPDataLearner, U, x, y, xt, yt, xbar, a.seed + 4),
    }
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(fixture, f)
    tp = fixture["train_predictive"]
    print(f"pfedgp_fixed: tree {[(n['left'], n['right']) for n in nodes]}; predictive loss {tp['pfl']['loss']:.6f} "
          f"(official quadrature {tp['official']['loss']:.6f}); "
          f"marginal loss {fixture['train_marginal']['pfl']['loss']:.6f} -> {a.out}")


if __name__ == "__main__":
    main()
