"""Mean functions of the gpytorch stand-in (see __init__.py)."""
import torch


class ConstantMean(torch.nn.Module):
    """m(x) = c for every input row; c a parameter, initially 0, one per batch entry."""

    def __init__(self, batch_shape=torch.Size([]), **kwargs):
        super().__init__()
        if kwargs.get("prior") is not None:
            raise NotImplementedError("gpytorch stand-in: ConstantMean takes no prior")
        self.batch_shape = torch.Size(batch_shape)
        self.constant = torch.nn.Parameter(torch.zeros(self.batch_shape + (1,)))

    def forward(self, x):
        """x: (..., n, d) → (..., n), every entry the constant."""
        return self.constant.expand(*torch.broadcast_shapes(x.shape[:-1], self.constant.shape))
