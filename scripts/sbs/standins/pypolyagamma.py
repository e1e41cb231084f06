"""A stand-in for pypolyagamma (slinderman/pypolyagamma; the official pFedGP code pins 1.2.3),
written for scripts/sbs/pfedgp_official.py, which runs IdanAchituve/pFedGP unmodified where
pypolyagamma cannot be installed (no Debian package, no PyPI access). It is not pypolyagamma:
it holds only what the official trainers call, written from the mathematics (Polson, Scott
and Windle, "Bayesian inference for logistic models using Pólya-Gamma latent variables",
JASA 2013, §4), not from pypolyagamma's source:

  PyPolyaGamma(seed=0, trunc=200)   a sampler with its own random stream, seeded with `seed`
                                    (pypolyagamma's default seed is 0 as well, and the official
                                    code never passes one: every new sampler, one per GP node
                                    and round, restarts the same stream, as with the library)
  .pgdrawv(b, c, out)               out[i] ~ PG(b[i], c[i]), in place
  .pgdraw(b, c)                     one draw

PG(b, c) is the law of (1/(2π²))·Σ_{k≥1} g_k/((k − ½)² + c²/(4π²)), g_k ~ Gamma(b, 1) i.i.d.
For a whole number b (the official code's b is a count of 1 or more) a draw is the sum of b
PG(1, c) draws, each J*(1, |c|/2)/4 drawn by Devroye's exact method (accept–reject from a
mixture of a truncated inverse Gaussian and a truncated exponential, decided by the
alternating series of J*'s density), vectorized over the array. Other b (which the official
trainers never pass) take the series truncated at `trunc` terms plus its remainder's mean.
pgpdf, which only the official PAC-Bayes bound code (pFedGPFullBound) calls, is not stood in.
check_pfedgp.py in this folder checks the draws against E[PG(b, c)] = b/(2c)·tanh(c/2), the
variance, the Laplace transform E[e^{−sω}] = cosh^b(c/2)/cosh^b(√(c²/4 + s/2)) and the
truncated series.
"""
import math

import numpy as np
from scipy.special import log_ndtr

__version__ = "0+pfl-standin"

_T = 0.64  # Devroye's switch point between the two pieces of J*(1, z)'s envelope


def _coef(n, x):
    """a_n(x), the n-th term of J*(1, 0)'s alternating-series density Σ(−1)^n a_n(x):
    π(n+½)(2/(πx))^{3/2}exp(−2(n+½)²/x) for x ≤ t, π(n+½)exp(−(n+½)²π²x/2) above."""
    h = n + 0.5
    out = np.empty_like(x)
    left = x <= _T
    xl = x[left]
    with np.errstate(divide="ignore", over="ignore"):
        out[left] = np.exp(np.log(math.pi * h) + 1.5 * np.log(2.0 / (math.pi * xl)) - 2.0 * h * h / xl)
    out[~left] = math.pi * h * np.exp(-h * h * math.pi ** 2 * x[~left] / 2.0)
    return out


def _truncated_ig(z, rng):
    """Draws from the inverse Gaussian IG(μ = 1/z, λ = 1) restricted to (0, t), z ≥ 0."""
    out = np.empty_like(z)
    small = np.flatnonzero(z < 1.0 / _T)  # μ > t: 1/x from a normal tail, then tilt by e^{−z²x/2}
    while small.size:
        e1 = rng.standard_exponential(small.size)
        e2 = rng.standard_exponential(small.size)
        x = _T / (1.0 + _T * e1) ** 2
        ok = (e1 * e1 <= 2.0 * e2 / _T) & (rng.random(small.size) <= np.exp(-0.5 * z[small] ** 2 * x))
        out[small[ok]] = x[ok]
        small = small[~ok]
    big = np.flatnonzero(z >= 1.0 / _T)  # μ ≤ t: untruncated IG draws, kept when below t
    while big.size:
        mu = 1.0 / z[big]
        y = rng.standard_normal(big.size) ** 2
        x = mu + 0.5 * mu * mu * y - 0.5 * mu * np.sqrt(4.0 * mu * y + (mu * y) ** 2)
        flip = rng.random(big.size) > mu / (mu + x)
        x[flip] = mu[flip] ** 2 / x[flip]
        ok = x < _T
        out[big[ok]] = x[ok]
        big = big[~ok]
    return out


def _jstar1(z, rng):
    """J*(1, z) draws for an array z ≥ 0 (Devroye's method); PG(1, c) = J*(1, |c|/2)/4."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    pending = np.arange(z.size)
    while pending.size:
        zz = z[pending]
        k = math.pi ** 2 / 8.0 + zz * zz / 2.0
        p = math.pi / (2.0 * k) * np.exp(-k * _T)  # envelope mass above t
        # below t: 2e^{−z}·P(IG(1/z, 1) < t); z = 0 is the Lévy limit 4Φ(−1/√t)
        a = (_T * zz - 1.0) / math.sqrt(_T)
        b = -(_T * zz + 1.0) / math.sqrt(_T)
        q = np.exp(math.log(2.0) - zz + log_ndtr(a)) + np.exp(math.log(2.0) + zz + log_ndtr(b))
        right = rng.random(zz.size) < p / (p + q)
        x = np.empty_like(zz)
        x[right] = _T + rng.standard_exponential(int(right.sum())) / k[right]
        x[~right] = _truncated_ig(zz[~right], rng)
        # accept x with probability (Σ(−1)^n a_n(x))/a_0(x): the alternating partial sums
        # bracket the density, so the first one on the far side of the uniform decides
        s = _coef(0, x)
        u = rng.random(x.size) * s
        accepted = np.zeros(x.size, dtype=bool)
        open_ = np.ones(x.size, dtype=bool)
        n = 0
        while open_.any():
            n += 1
            idx = np.flatnonzero(open_)
            an = _coef(n, x[idx])
            if n % 2:
                s[idx] -= an
                yes = u[idx] <= s[idx]
                accepted[idx[yes]] = True
                open_[idx[yes]] = False
            else:
                s[idx] += an
                no = u[idx] > s[idx]
                open_[idx[no]] = False
        out[pending[accepted]] = x[accepted]
        pending = pending[~accepted]
    return out


def _pg_series(b, c, trunc, rng):
    """PG(b, c) by the series truncated at `trunc` terms, plus the remainder's mean (the exact
    mean b/(2c)·tanh(c/2) minus the kept terms' mean)."""
    k = np.arange(1, trunc + 1) - 0.5
    d = k[None, :] ** 2 + (c[:, None] / (2.0 * math.pi)) ** 2
    g = rng.standard_gamma(np.broadcast_to(b[:, None], d.shape))
    kept = (g / d).sum(1) / (2.0 * math.pi ** 2)
    kept_mean = (b[:, None] / d).sum(1) / (2.0 * math.pi ** 2)
    return kept + np.maximum(pg_mean(b, c) - kept_mean, 0.0)


def pg_mean(b, c):
    """E[PG(b, c)] = b/(2c)·tanh(c/2), b/4 at c = 0."""
    b, c = np.asarray(b, dtype=np.float64), np.abs(np.asarray(c, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        m = b / (2.0 * c) * np.tanh(c / 2.0)
    return np.where(c < 1e-8, b / 4.0, m)


class PyPolyaGamma:
    """A Pólya-Gamma sampler with its own random stream (see the module's doc)."""

    def __init__(self, seed=0, trunc=200):
        self._rng = np.random.Generator(np.random.PCG64(int(seed)))
        self.trunc = int(trunc)

    def set_trunc(self, trunc):
        self.trunc = int(trunc)

    def pgdraw(self, b, c):
        out = np.zeros(1)
        self.pgdrawv(np.array([b], dtype=np.float64), np.array([c], dtype=np.float64), out)
        return float(out[0])

    def pgdrawv(self, b, c, out):
        """out[i] ~ PG(b[i], c[i]) for float64 arrays of one length; out is filled in place."""
        b = np.asarray(b, dtype=np.float64).reshape(-1)
        c = np.asarray(c, dtype=np.float64).reshape(-1)
        if not (b.size == c.size == out.size):
            raise ValueError(f"pgdrawv: b, c and out have {b.size}, {c.size} and {out.size} entries")
        if (b < 0).any():
            raise ValueError("pgdrawv: b must be ≥ 0")
        res = np.zeros(b.size)
        whole = b == np.round(b)
        z = np.abs(c) / 2.0
        nb = np.where(whole, b, 0).astype(np.int64)
        for j in range(int(nb.max(initial=0))):  # b PG(1, c) draws, one pass per unit of b
            idx = np.flatnonzero(nb > j)
            res[idx] += _jstar1(z[idx], self._rng) / 4.0
        frac = np.flatnonzero(~whole)
        if frac.size:
            res[frac] = _pg_series(b[frac], c[frac], self.trunc, self._rng)
        out[...] = res.reshape(out.shape)


def pgpdf(*args, **kwargs):
    raise NotImplementedError("pypolyagamma stand-in: pgpdf is not stood in (only pFedGPFullBound calls it)")
