#!/usr/bin/python3
"""Checks the stand-ins scripts/sbs/pfedgp_official.py runs the official pFedGP code with
(pypolyagamma.py and gpytorch/ in this folder) against closed forms; a few seconds of one
CPU. Exits non-zero on the first failure.

  /usr/bin/python3 scripts/sbs/standins/check_pfedgp.py

Pólya-Gamma draws PG(b, c) (200,000 a case; the tolerance is 4.5 standard errors):
  mean       E[ω] = b/(2c)·tanh(c/2)
  variance   Var[ω] = b·Σ_k 1/(4π⁴d_k²), d_k = (k − ½)² + c²/(4π²) (the series' variance)
  Laplace    E[e^{−sω}] = cosh^b(c/2) / cosh^b(√(c²/4 + s/2)), s = 1 and 4
  law        two-sample Kolmogorov–Smirnov against the sum-of-gammas series (200 terms)
  seeding    two samplers built alike draw alike (pypolyagamma's per-sampler stream)
gpytorch pieces:
  kernel     ScaleKernel(RBFKernel) with outputscale 8, lengthscale 1 (and 0.5) read back,
             and its matrix (+ jitter) against s·exp(−‖x − x'‖²/(2ℓ²)) in float64;
             autograd's gradient against finite differences (gradcheck)
  mean       ConstantMean is 0 for every row
  quadrature 20-point Gauss–Hermite: E[f²] = μ² + σ² exactly, E[log σ(f)] against adaptive
             quadrature (scipy.integrate.quad)
"""
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from scipy import integrate, stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpytorch  # noqa: E402  (the stand-in)
import pypolyagamma  # noqa: E402  (the stand-in)
from gpytorch import constraints, kernels  # noqa: E402
from gpytorch.utils.quadrature import GaussHermiteQuadrature1D  # noqa: E402

failures = []


def check(name, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
    if not ok:
        failures.append(name)


def series_variance(b, c, terms=1_000_000):
    k = np.arange(1, terms + 1) - 0.5
    d = k * k + (c / (2 * math.pi)) ** 2
    return b * (np.sum(1.0 / d ** 2) + 1.0 / (3.0 * terms ** 3)) / (4 * math.pi ** 4)


def check_pg():
    n = 200_000
    ppg = pypolyagamma.PyPolyaGamma(seed=7)
    for b, c in [(1, 0.0), (1, 0.5), (1, 2.0), (1, 8.0), (1, -30.0), (2, 1.5), (3, 4.0)]:
        w = np.zeros(n)
        ppg.pgdrawv(np.full(n, float(b)), np.full(n, c), w)
        m = float(pypolyagamma.pg_mean(b, c))
        se = w.std() / math.sqrt(n)
        check(f"PG({b}, {c}) mean", abs(w.mean() - m) < 4.5 * se, f"{w.mean():.6f} vs {m:.6f} (se {se:.1e})")
        v = series_variance(b, c)
        se_v = np.std((w - w.mean()) ** 2) / math.sqrt(n)
        check(f"PG({b}, {c}) variance", abs(w.var() - v) < 4.5 * se_v, f"{w.var():.3e} vs {v:.3e} (se {se_v:.1e})")
        for s in (1.0, 4.0):
            lt = (math.cosh(c / 2) / math.cosh(math.sqrt(c * c / 4 + s / 2))) ** b
            e = np.exp(-s * w)
            se_l = e.std() / math.sqrt(n)
            check(f"PG({b}, {c}) Laplace s={s}", abs(e.mean() - lt) < 4.5 * se_l,
                  f"{e.mean():.6f} vs {lt:.6f} (se {se_l:.1e})")
    rng = np.random.default_rng(11)
    for c in (0.0, 2.0, 8.0):
        w = np.zeros(n)
        ppg.pgdrawv(np.ones(n), np.full(n, c), w)
        ref = pypolyagamma._pg_series(np.ones(n), np.full(n, c), 200, rng)
        p = stats.ks_2samp(w, ref).pvalue
        check(f"PG(1, {c}) law vs series", p > 1e-3, f"KS p = {p:.3f}")
    a, b = np.zeros(5), np.zeros(5)
    pypolyagamma.PyPolyaGamma().pgdrawv(np.ones(5), np.linspace(-2, 2, 5), a)
    pypolyagamma.PyPolyaGamma().pgdrawv(np.ones(5), np.linspace(-2, 2, 5), b)
    check("PyPolyaGamma() streams", np.array_equal(a, b), "two default samplers draw alike (seed 0)")
    c = np.random.default_rng(3).normal(0, 3, 20 * 500)
    w = np.zeros_like(c)
    t0 = time.perf_counter()
    ppg.pgdrawv(np.ones_like(c), c, w)
    print(f"     {c.size} draws of PG(1, c), c ~ N(0, 9): {time.perf_counter() - t0:.3f} s")


def check_gp():
    torch.manual_seed(0)
    x = F.normalize(torch.randn(60, 84))  # as the official GPModel.forward
    y = F.normalize(torch.randn(25, 84))
    for ell in (1.0, 0.5):
        k = kernels.ScaleKernel(kernels.RBFKernel(lengthscale_constraint=constraints.GreaterThan(1e-2)))
        k.outputscale, k.base_kernel.lengthscale = 8.0, ell
        s, l = k.outputscale.item(), k.base_kernel.lengthscale.item()
        check(f"kernel parameters (ℓ={ell})", abs(s - 8) < 1e-5 and abs(l - ell) < 1e-6, f"outputscale {s}, lengthscale {l}")
        got = k(x).add_jitter(jitter_val=1e-3).evaluate().double()
        xd = x.double()
        want = 8.0 * torch.exp(-torch.cdist(xd, xd) ** 2 / (2 * ell ** 2)) + 1e-3 * torch.eye(60, dtype=torch.float64)
        err = (got - want).abs().max().item()
        check(f"K(x, x) + jitter (ℓ={ell})", err < 1e-5 and torch.equal(got.diagonal(), torch.full((60,), got[0, 0].item(), dtype=torch.float64)),
              f"max |error| {err:.1e}")
        got = k(x, y).evaluate().double()
        want = 8.0 * torch.exp(-torch.cdist(xd, y.double()) ** 2 / (2 * ell ** 2))
        err = (got - want).abs().max().item()
        check(f"K(x, y) (ℓ={ell})", err < 1e-5, f"max |error| {err:.1e}")
    k = kernels.ScaleKernel(kernels.RBFKernel()).double()
    k.outputscale, k.base_kernel.lengthscale = 8.0, 1.0
    z = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    ok = torch.autograd.gradcheck(lambda v: k(F.normalize(v)).add_jitter(1e-3).evaluate(), (z,))
    check("kernel gradient", ok, "gradcheck against finite differences")
    m = gpytorch.means.ConstantMean()
    out = m(x)
    check("ConstantMean", out.shape == (60,) and out.abs().max().item() == 0.0, f"shape {tuple(out.shape)}")
    for bad in (kernels.LinearKernel, kernels.MaternKernel):
        try:
            bad()
            check(f"{bad.__name__} refuses", False, "was built")
        except NotImplementedError:
            check(f"{bad.__name__} refuses", True, "NotImplementedError")
    q = GaussHermiteQuadrature1D()
    mu = torch.tensor([[-3.0, 0.0, 0.7, 5.0], [1.0, -0.2, 2.0, -6.0]], dtype=torch.float64)
    sd = torch.tensor([[0.1, 1.0, 2.0, 3.0], [0.5, 4.0, 0.01, 1.5]], dtype=torch.float64)
    dist = torch.distributions.MultivariateNormal(mu, scale_tril=torch.diag_embed(sd))
    err = (q(lambda f: f ** 2, dist) - (mu ** 2 + sd ** 2)).abs().max().item()
    check("quadrature E[f²]", err < 1e-10, f"max |error| {err:.1e}")
    got = q(F.logsigmoid, dist)
    want = torch.tensor([[integrate.quad(lambda f: -np.logaddexp(0, -f) * stats.norm.pdf(f, a, s), a - 12 * s, a + 12 * s,
                                         points=[0.0] if a - 12 * s < 0 < a + 12 * s else None, limit=200)[0]
                          for a, s in zip(r_mu, r_sd)] for r_mu, r_sd in zip(mu.tolist(), sd.tolist())], dtype=torch.float64)
    err = (got - want).abs().max().item()
    check("quadrature E[log σ(f)]", err < 1e-3, f"max |error| {err:.1e} (20 nodes)")


def main():
    torch.set_num_threads(1)
    check_gp()
    check_pg()
    if failures:
        sys.exit(f"check_pfedgp: {len(failures)} failed: {', '.join(failures)}")
    print("check_pfedgp: all stand-in checks passed")


if __name__ == "__main__":
    main()
