#!/usr/bin/python3
"""Writes the golden file pfl's digit5cnn is tested against, computed by PFLlib's own
Digit5CNN (TsingZ0/PFLlib, system/flcore/trainmodel/models.py), imported unmodified from a
checkout: the network PFLlib's main.py builds for `-m CNN` on a dataset named Digit5, and the
one the PFLlib side-by-side runs FedBN on (scripts/sbs/pfllib-run.py --digit5).

Get PFLlib with `git clone https://github.com/TsingZ0/PFLlib` (any checkout whose models.py
has Digit5CNN; the golden file in the repository was written from commit
d832e76f6a23b833038949ec1e4fdefe63a4d350), then

  /usr/bin/python3 scripts/golden/pfllib_digit5.py --checkout PATH/TO/PFLlib

The network has 31.8 million parameters (256 MB in float64), so the file does not hold them:
every tensor's values are v(i, j) = ((7919·i + 104729·j) mod 2003) / 1001.5 − 1, i the
element's flat index and j the tensor's position in state_dict order, mapped to
b + a·v with a and b per tensor (stored as a/NAME and b/NAME): U(±1/√fan_in)-sized weights
and biases, BatchNorm scales and running variances near 1, shifts and running means near 0.
Integer arithmetic, one correctly rounded division and one fused-free multiply-add give the
same float64 bits in Go (engine/model/digit5_golden_test.go).

Outputs (safetensors, F64 and I64), engine/model/testdata/golden/digit5_pfllib.safetensors:
  a/NAME, b/NAME      each tensor's affine map of v (scalars)
  x, y                a batch of four 3×32×32 images and labels
  logits, loss        a training-mode pass (batch statistics) with the dropout's p set to 0
                      on the instance (a random mask cannot be matched across two RNGs)
  grad/NAME           the gradient of the mean cross-entropy for tensors of at most 4,096
                      elements; for larger ones grad_head/NAME (the first 256 elements) and
                      grad_dot/NAME (the gradient's sum against u(i, j) =
                      ((6007·i + 31·j) mod 1009) / 504.5 − 1, same indices)
  stats/NAME          the running statistics after that pass (momentum 0.1)
  eval_logits         an evaluation-mode pass of the same batch (running statistics, no dropout)
  metadata            names (NAME:shape;… in state_dict order, buffers marked with *),
                      params (the parameter count), commit
"""
import argparse
import math
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import ROOT, write_safetensors  # noqa: E402  (gen sets float64 as torch's default)

HEAD = 256
SMALL = 4096


def pattern(n, j, mul, add, mod, half):
    """((mul·i + add·j) mod mod) / half − 1 for i in [0, n), in float64."""
    i = torch.arange(n, dtype=torch.int64)
    return ((i * mul + add * j) % mod).to(torch.float64) / half - 1.0


def affine(name, state):
    """The (a, b) of a tensor: BatchNorm scales and running variances 1 ± 0.1, shifts and
    running means ± 0.1; a layer's weight and bias ±1/√fan_in, the weight's fan-in."""
    module, kind = name.rsplit(".", 1)
    if module.rsplit(".", 1)[-1].startswith("bn"):
        return (0.1, 1.0) if kind in ("weight", "running_var") else (0.1, 0.0)
    w = state[module + ".weight"]
    return 1.0 / math.sqrt(w[0].numel()), 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", required=True, help="a TsingZ0/PFLlib checkout (system/flcore/trainmodel/models.py)")
    ap.add_argument("--commit", help="the checkout's commit, recorded (default: git rev-parse HEAD in it)")
    a = ap.parse_args()
    system = os.path.join(os.path.abspath(a.checkout), "system")
    if not os.path.isfile(os.path.join(system, "flcore", "trainmodel", "models.py")):
        sys.exit(f"pfllib_digit5: --checkout {a.checkout}: no system/flcore/trainmodel/models.py")
    sys.dont_write_bytecode = True
    sys.path.insert(0, system)
    from flcore.trainmodel.models import Digit5CNN

    torch.manual_seed(5)
    m = Digit5CNN()  # float64: gen sets the default dtype
    state = m.state_dict()
    out, names = {}, []
    with torch.no_grad():
        for name, t in state.items():
            if name.endswith("num_batches_tracked"):
                continue  # an int counter that momentum-0.1 BatchNorm never reads; pfl has none
            sc, sh = affine(name, state)
            t.copy_((sh + sc * pattern(t.numel(), len(names), 7919, 104729, 2003, 1001.5)).reshape(t.shape))
            out["a/" + name], out["b/" + name] = torch.tensor([sc]), torch.tensor([sh])
            buffer = name.endswith(("running_mean", "running_var"))
            names.append(f"{name}:{'x'.join(map(str, t.shape))}{'*' if buffer else ''}")
    params = dict(m.named_parameters())
    x = torch.randn(4, 3, 32, 32)
    y = torch.tensor([3, 0, 9, 3])
    m.train()
    m.linear.dropout.p = 0.0  # on this instance only: no random mask in the golden pass
    logits = m(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    grads = torch.autograd.grad(loss, list(params.values()))
    out.update({"x": x, "y": y, "logits": logits, "loss": loss.reshape(1)})
    order = [n.split(":")[0] for n in names]
    for (name, p), g in zip(params.items(), grads):
        if g.numel() <= SMALL:
            out["grad/" + name] = g
        else:
            u = pattern(g.numel(), order.index(name), 6007, 31, 1009, 504.5)
            out["grad_head/" + name] = g.reshape(-1)[:HEAD].clone()
            out["grad_dot/" + name] = (g.reshape(-1) * u).sum().reshape(1)
    out.update({"stats/" + k: v.detach().clone() for k, v in m.state_dict().items() if "running" in k})
    m.eval()
    with torch.no_grad():
        out["eval_logits"] = m(x)
    commit = a.commit
    try:
        commit = commit or subprocess.run(["git", "-C", a.checkout, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git checkout)"
    meta = {"names": ";".join(names), "params": str(sum(p.numel() for p in params.values())), "commit": commit}
    path = os.path.join(ROOT, "engine/model/testdata/golden/digit5_pfllib.safetensors")
    write_safetensors(path, out, meta)
    print(f"pfllib_digit5: {meta['params']} parameters, {len(names)} tensors -> {path}")


if __name__ == "__main__":
    main()
