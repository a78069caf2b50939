"""The linear form every fitting method of the lab fits, and what the methods share: sample
points, checked evaluation of the callables, the weighted system and its max error.

A method fits coefficients ``c`` of a linear combination

    p(u) = sum_k c_k phi_k(u),    u in [a, b],

of ``m`` basis functions, to a target ``f(u)`` (an activation's residual). The basis and the
target are plain callables, so any basis (``u^factor * t^k`` in a normalized variable ``t``,
Chebyshev polynomials, ...) plugs in:

* ``basis(u) -> (n, m)`` array, row i = ``[phi_0(u_i), ..., phi_{m-1}(u_i)]``;
* ``f(u) -> (n,)`` array of target values;
* optionally a positive error scale ``weight(u) -> (n,)``: the minimax methods then minimize
  ``max |(f - p) / weight|`` (``weight = |f|`` gives the relative error).

The methods themselves: ``least_squares.py``, ``remez.py``, ``coefficient_search.py``,
``sollya.py`` (``methods.py`` gathers them).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Basis = Callable[[np.ndarray], np.ndarray]
Target = Callable[[np.ndarray], np.ndarray]
Weight = Callable[[np.ndarray], np.ndarray]

EPS = float(np.finfo(np.float64).eps)

# A basis row (or target value) at most this fraction of the largest basis entry on the
# interval counts as vanishing: an endpoint where the basis vanishes is degenerate.
DEGENERATE_RTOL = 1e-13


def check_interval(a: float, b: float) -> tuple[float, float]:
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"need a finite interval a < b, got [{a}, {b}]")
    return a, b


def sample_points(a: float, b: float, n: int, kind: str = "chebyshev") -> np.ndarray:
    """``n`` increasing sample points of ``[a, b]``, both ends included (exactly).

    ``kind="chebyshev"`` (the default of every fitting method): Chebyshev-Lobatto points
    ``(a+b)/2 + (b-a)/2 sin(pi (2j - n + 1) / (2n - 2))``, j = 0..n-1 (the extrema of
    ``T_{n-1}``, written with a sine so that they are symmetric and the midpoint is exact).
    Unweighted least squares on these points is a quadrature of the Chebyshev-weighted L2 norm
    ``int (f - p)^2 / sqrt(1 - t^2) dt``, whose polynomial minimizer (the truncated Chebyshev
    series) is within a factor ``~ 4 + (4/pi^2) log(deg)`` of the best max error. On uniform
    points least squares approaches the Legendre projection, whose error grows near the ends
    of the interval, which is where a minimax error curve has its extrema too. The points
    cluster at the ends, where the interval's endpoints and the largest errors are.

    ``kind="uniform"``: ``np.linspace(a, b, n)``.
    """
    a, b = check_interval(a, b)
    n = int(n)
    if n < 2:
        raise ValueError(f"need at least 2 sample points, got {n}")
    if kind == "uniform":
        u = np.linspace(a, b, n)
    elif kind == "chebyshev":
        j = np.arange(n, dtype=np.float64)
        s = np.sin(np.pi * (2.0 * j - (n - 1)) / (2.0 * (n - 1)))
        u = np.clip(0.5 * (a + b) + 0.5 * (b - a) * s, a, b)
    else:
        raise ValueError(f"kind must be 'chebyshev' or 'uniform', got {kind!r}")
    u[0], u[-1] = a, b
    return u


def eval_basis(basis: Basis, u: np.ndarray) -> np.ndarray:
    B = np.asarray(basis(u), dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != u.shape[0]:
        raise ValueError(f"basis(u) must have shape ({u.shape[0]}, m), got {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("basis(u) has non-finite values on the interval")
    return B


def eval_target(f: Target, u: np.ndarray) -> np.ndarray:
    y = np.asarray(f(u), dtype=np.float64).reshape(-1)
    if y.shape != u.shape:
        raise ValueError(f"f(u) must have shape {u.shape}, got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("f(u) has non-finite values on the interval")
    return y


def eval_weight(weight: Weight | None, u: np.ndarray) -> np.ndarray:
    if weight is None:
        return np.ones_like(u)
    w = np.asarray(weight(u), dtype=np.float64).reshape(-1)
    if w.shape != u.shape:
        raise ValueError(f"weight(u) must have shape {u.shape}, got {w.shape}")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weight(u) must be positive and finite on the interval")
    return w


def weighted_system(basis: Basis, f: Target, weight: Weight | None, u: np.ndarray):
    """``(u, B / s, y / s)`` for the minimax methods, ``s = weight(u)``.

    Points where every basis function and ``f`` vanish (``u = 0`` with a ``u^factor`` basis and
    a residual ``f = O(u^factor)``) carry no information, as the error there is 0 whatever the
    coefficients: they are left out, so that a weight vanishing there too (a relative error)
    is never evaluated at them.
    """
    B, y = eval_basis(basis, u), eval_target(f, u)
    B_scale = float(np.max(np.abs(B)))
    f_scale = float(np.max(np.abs(y)))
    dead = (np.max(np.abs(B), axis=1) <= DEGENERATE_RTOL * B_scale) & (
        np.abs(y) <= 64 * EPS * f_scale
    )
    if dead.any():
        u, B, y = u[~dead], B[~dead], y[~dead]
    s = eval_weight(weight, u)
    return u, B / s[:, None], y / s


def lstsq(B: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with the columns equilibrated (scaled to max-abs 1), solved by SVD."""
    s = np.max(np.abs(B), axis=0)
    s = np.where(s > 0, s, 1.0)
    c, *_ = np.linalg.lstsq(B / s, y, rcond=None)
    return c / s


def evaluate(basis: Basis, coeffs, u) -> np.ndarray:
    """``p(u) = basis(u) @ coeffs`` in float64."""
    u = np.asarray(u, dtype=np.float64).reshape(-1)
    return eval_basis(basis, u) @ np.asarray(coeffs, dtype=np.float64)


def max_error(
    basis: Basis,
    f: Target,
    a: float,
    b: float,
    coeffs,
    *,
    points: int = 20001,
    weight: Weight | None = None,
    kind: str = "chebyshev",
) -> float:
    """``max |(f - p) / weight|`` over ``points`` sample points of ``[a, b]`` (float64).

    Computed as ``search_rounded`` computes it (``f / weight`` minus the terms
    ``(phi_k / weight) c_k`` in index order), so on the same grid the two agree bit for bit.
    Points where the basis and ``f`` all vanish are left out (``weighted_system``).
    """
    _, B, y = weighted_system(basis, f, weight, sample_points(a, b, points, kind))
    c = np.asarray(coeffs, np.float64).reshape(-1, 1)
    return float(np.max(np.abs(residual_matrix(B, y, c))))


def endpoint_constraints(basis: Basis, f: Target, a: float, b: float, B_scale: float):
    """Rows ``phi(e)`` and values ``f(e)`` at e = a, b; splits off the degenerate ones."""
    ends = np.array([a, b])
    C, d = eval_basis(basis, ends), eval_target(f, ends)
    vanishing = np.max(np.abs(C), axis=1) <= DEGENERATE_RTOL * B_scale
    return ends, C, d, vanishing


def residual_matrix(B: np.ndarray, y: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``y - B @ C`` column by column in a fixed order (independent of how many columns), so
    an error computed in a batch equals the one computed alone, bit for bit."""
    r = np.repeat(y[:, None], C.shape[1], axis=1)
    for k in range(B.shape[1]):
        r -= B[:, k : k + 1] * C[k][None, :]
    return r
