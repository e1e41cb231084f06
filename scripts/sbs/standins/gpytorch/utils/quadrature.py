"""One-dimensional Gauss–Hermite quadrature of the gpytorch stand-in (see gpytorch/__init__.py).

For f ~ N(μ, σ²) elementwise, E[g(f)] = (1/√π) Σ_i w_i g(μ + √(2σ²)·t_i), with (t_i, w_i) the
nodes and weights of the num_locs-point Gauss–Hermite rule for ∫ e^{−t²} h(t) dt (numpy's
hermgauss), exact for polynomials g of degree < 2·num_locs. gpytorch's default is 20 nodes."""
import math

import numpy as np
import torch


class GaussHermiteQuadrature1D(torch.nn.Module):
    def __init__(self, num_locs=20):
        super().__init__()
        self.num_locs = int(num_locs)
        t, w = np.polynomial.hermite.hermgauss(self.num_locs)
        self.register_buffer("locations", torch.tensor(t, dtype=torch.float64))
        self.register_buffer("weights", torch.tensor(w, dtype=torch.float64))

    def forward(self, func, gaussian_dists):
        """E[func(f)] under each marginal of gaussian_dists (anything with .mean and .variance,
        e.g. torch.distributions.MultivariateNormal: its diagonal); the mean's shape."""
        mean, var = gaussian_dists.mean, gaussian_dists.variance
        extra = (1,) * mean.dim()
        t = self.locations.to(mean).view(-1, *extra)
        w = self.weights.to(mean).view(-1, *extra)
        values = func(torch.sqrt(2.0 * var).unsqueeze(0) * t + mean.unsqueeze(0))
        return (w * values).sum(0) / math.sqrt(math.pi)
