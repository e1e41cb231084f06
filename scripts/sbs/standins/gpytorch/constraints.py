"""Parameter constraints of the gpytorch stand-in (see __init__.py): a raw, unconstrained
parameter r stands for the value softplus(r) + lower_bound."""
import torch
import torch.nn.functional as F


class GreaterThan(torch.nn.Module):
    """value = softplus(raw) + lower_bound (> lower_bound)."""

    def __init__(self, lower_bound):
        super().__init__()
        self.lower_bound = float(lower_bound)

    def transform(self, raw):
        return F.softplus(raw) + self.lower_bound

    def inverse_transform(self, value):
        """softplus⁻¹(value − lower_bound) = y + log(1 − e^{−y}), y = value − lower_bound."""
        y = torch.as_tensor(value, dtype=torch.float64) - self.lower_bound
        if (y <= 0).any():
            raise ValueError(f"value {value} is not above the lower bound {self.lower_bound}")
        return y + torch.log(-torch.expm1(-y))

    def __repr__(self):
        return f"GreaterThan({self.lower_bound})"


class Positive(GreaterThan):
    """value = softplus(raw) (> 0); gpytorch's default for scales."""

    def __init__(self):
        super().__init__(0.0)

    def __repr__(self):
        return "Positive()"

