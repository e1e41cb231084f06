"""Kernels of the gpytorch stand-in (see __init__.py). gpytorch returns a lazily evaluated
kernel matrix; the official pFedGP code only adds jitter to it and evaluates it, so here
calling a kernel computes the dense matrix at once and wraps it in KernelMatrix, which offers
those two methods."""
import torch

from .constraints import Positive


class KernelMatrix:
    """A dense kernel matrix with the two methods pFedGP calls on gpytorch's lazy one."""

    def __init__(self, dense):
        self.dense = dense

    def add_jitter(self, jitter_val=1e-3):
        """K + jitter_val·I (a square matrix, or a batch of them)."""
        n, m = self.dense.shape[-2:]
        if n != m:
            raise ValueError(f"add_jitter: the kernel matrix is {n}x{m}, not square")
        eye = torch.eye(n, dtype=self.dense.dtype, device=self.dense.device)
        return KernelMatrix(self.dense + jitter_val * eye)

    def evaluate(self):
        return self.dense

    @property
    def shape(self):
        return self.dense.shape


class Kernel(torch.nn.Module):
    """k(x1, x2) on inputs (..., n, d) and (..., m, d), called as gpytorch's kernels are."""

    def __init__(self, batch_shape=torch.Size([])):
        super().__init__()
        self.batch_shape = torch.Size(batch_shape)

    def __call__(self, x1, x2=None, **params):
        if params:
            raise NotImplementedError(f"gpytorch stand-in: kernel options {sorted(params)}")
        if x1.dim() == 1:
            x1 = x1.unsqueeze(-1)
        if x2 is None:
            x2 = x1
        elif x2.dim() == 1:
            x2 = x2.unsqueeze(-1)
        return KernelMatrix(self.forward(x1, x2))


def squared_distances(x1, x2):
    """‖x1_i − x2_j‖² for rows of x1 (..., n, d) and x2 (..., m, d), by the expansion
    ‖a‖² + ‖b‖² − 2a·b after subtracting x1's row mean from both (distances do not change;
    the cancellation shrinks), clamped at 0; exactly 0 on the diagonal when x1 equals x2."""
    shift = x1.mean(dim=-2, keepdim=True)
    a, b = x1 - shift, x2 - shift
    d = (a * a).sum(-1, keepdim=True) + (b * b).sum(-1).unsqueeze(-2) - 2.0 * a.matmul(b.transpose(-2, -1))
    d = d.clamp_min(0.0)
    if x1.shape == x2.shape and torch.equal(x1, x2):
        n = d.shape[-1]
        d = d * (1.0 - torch.eye(n, dtype=d.dtype, device=d.device))
    return d


class RBFKernel(Kernel):
    """k(x, x') = exp(−‖x − x'‖²/(2ℓ²)), one lengthscale ℓ (no ARD), ℓ = softplus(raw) + bound."""

    def __init__(self, batch_shape=torch.Size([]), lengthscale_constraint=None, ard_num_dims=None, **kwargs):
        super().__init__(batch_shape)
        if ard_num_dims not in (None, 1) or kwargs:
            raise NotImplementedError("gpytorch stand-in: RBFKernel takes batch_shape and lengthscale_constraint")
        self.raw_lengthscale = torch.nn.Parameter(torch.zeros(self.batch_shape + (1, 1)))
        self.raw_lengthscale_constraint = lengthscale_constraint if lengthscale_constraint is not None else Positive()

    @property
    def lengthscale(self):
        return self.raw_lengthscale_constraint.transform(self.raw_lengthscale)

    @lengthscale.setter
    def lengthscale(self, value):
        raw = self.raw_lengthscale_constraint.inverse_transform(value)
        with torch.no_grad():
            self.raw_lengthscale.copy_(raw.to(self.raw_lengthscale).expand_as(self.raw_lengthscale))

    def forward(self, x1, x2):
        ell = self.lengthscale
        return torch.exp(-0.5 * squared_distances(x1.div(ell), x2.div(ell)))


class ScaleKernel(Kernel):
    """s·k(x, x') for a base kernel k, s = softplus(raw) (> 0)."""

    def __init__(self, base_kernel, outputscale_constraint=None, **kwargs):
        super().__init__(base_kernel.batch_shape)
        if kwargs:
            raise NotImplementedError(f"gpytorch stand-in: ScaleKernel options {sorted(kwargs)}")
        self.base_kernel = base_kernel
        self.raw_outputscale = torch.nn.Parameter(torch.zeros(self.batch_shape))
        self.raw_outputscale_constraint = outputscale_constraint if outputscale_constraint is not None else Positive()

    @property
    def outputscale(self):
        return self.raw_outputscale_constraint.transform(self.raw_outputscale)

    @outputscale.setter
    def outputscale(self, value):
        raw = self.raw_outputscale_constraint.inverse_transform(value)
        with torch.no_grad():
            self.raw_outputscale.copy_(raw.to(self.raw_outputscale).expand_as(self.raw_outputscale))

    def forward(self, x1, x2):
        s = self.outputscale
        return s.view(*s.shape, 1, 1) * self.base_kernel.forward(x1, x2)


class _NotStoodIn(Kernel):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"gpytorch stand-in: {type(self).__name__} is not implemented; "
                                  "the official pFedGP trainers run --kernel-function RBFKernel")


class LinearKernel(_NotStoodIn):
    pass


class MaternKernel(_NotStoodIn):
    pass
