"""gpytorch.utils of the gpytorch stand-in (see gpytorch/__init__.py): quadrature only."""
from . import quadrature  # noqa: F401
