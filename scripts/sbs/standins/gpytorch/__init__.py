"""A stand-in for gpytorch (cornellius-gp/gpytorch; the official pFedGP code pins 1.4.2), written
for scripts/sbs/pfedgp_official.py, which runs IdanAchituve/pFedGP unmodified where gpytorch
cannot be installed (no Debian package, no PyPI access). It is not gpytorch: it holds only
what that code calls, written from the mathematics, not from gpytorch's source:

  gpytorch.kernels.RBFKernel, ScaleKernel   k(x, x') = s·exp(−‖x − x'‖²/(2ℓ²)), called as
                                            covar_module(x1, x2).add_jitter(v).evaluate()
  gpytorch.constraints.GreaterThan, Positive  softplus(raw) + lower bound
  gpytorch.means.ConstantMean               a constant (initially 0) for every input
  gpytorch.utils.quadrature.GaussHermiteQuadrature1D   E[g(f)], f ~ N(μ, σ²), 20 nodes

pFedGP sets s = 8 and ℓ = 1 (its --outputscale, --lengthscale) and never trains them (its
optimizer holds only the network), nor the mean. LinearKernel and MaternKernel exist so that
the official kernel_class.py imports, and refuse to be built: the official trainers'
default --kernel-function RBFKernel is the only one run. scripts/sbs/standins/check_pfedgp.py
checks each piece against a closed form.
"""
from . import constraints, kernels, means, utils  # noqa: F401

__version__ = "0+pfl-standin"
