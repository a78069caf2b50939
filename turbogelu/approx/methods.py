"""Fitting methods of the approximation lab, all for the same linear form.

Every method here fits coefficients ``c`` of a linear combination

    p(u) = sum_k c_k phi_k(u),    u in [a, b],

of ``m`` basis functions, to a target ``f(u)`` (an activation's residual). The basis and the
target are plain callables, so any basis (``u^factor * t^k`` in a normalized variable ``t``,
Chebyshev polynomials, ...) plugs in:

* ``basis(u) -> (n, m)`` array, row i = ``[phi_0(u_i), ..., phi_{m-1}(u_i)]``;
* ``f(u) -> (n,)`` array of target values;
* optionally a positive error scale ``weight(u) -> (n,)``: the minimax methods then minimize
  ``max |(f - p) / weight|`` (``weight = |f|`` gives the relative error).

Methods (float64, vectorized numpy / scipy):

* ``least_squares``: discrete least squares on Chebyshev-Lobatto points (see ``sample_points``
  for why not uniform points);
* ``irls``: Lawson's iteratively reweighted least squares, which tends to the discrete minimax
  fit on a dense grid (``fit._solve_irls``);
* ``endpoint_ls``: least squares subject to ``p(a) = f(a)`` and ``p(b) = f(b)`` exactly;
* ``remez``: the continuous minimax fit by the second Remez (multi-point exchange) algorithm;
* ``neighbours`` / ``search_rounded``: coefficients rounded to float32 / float16 / bfloat16
  (``rounding.round_to_format``), then improved by a deterministic search over neighbouring
  representable values;
* ``sollya_fpminimax``: an optional control, Sollya's ``fpminimax`` run as an external program
  (only when the ``sollya`` binary is installed; its figures are a cross-check, never an
  exact reference).

No torch here: the package stays pure numpy / scipy / mpmath.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import fit, rounding

Basis = Callable[[np.ndarray], np.ndarray]
Target = Callable[[np.ndarray], np.ndarray]
Weight = Callable[[np.ndarray], np.ndarray]

EPS = float(np.finfo(np.float64).eps)

# A basis row (or target value) at most this fraction of the largest basis entry on the
# interval counts as vanishing: an endpoint where the basis vanishes is degenerate.
DEGENERATE_RTOL = 1e-13


# ---------------------------------------------------------------- sampling and evaluation


def _check_interval(a: float, b: float) -> tuple[float, float]:
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"need a finite interval a < b, got [{a}, {b}]")
    return a, b


def sample_points(a: float, b: float, n: int, kind: str = "chebyshev") -> np.ndarray:
    """``n`` increasing sample points of ``[a, b]``, both ends included (exactly).

    ``kind="chebyshev"`` (the default of every method here): Chebyshev-Lobatto points
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
    a, b = _check_interval(a, b)
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


def _eval_basis(basis: Basis, u: np.ndarray) -> np.ndarray:
    B = np.asarray(basis(u), dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != u.shape[0]:
        raise ValueError(f"basis(u) must have shape ({u.shape[0]}, m), got {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("basis(u) has non-finite values on the interval")
    return B


def _eval_target(f: Target, u: np.ndarray) -> np.ndarray:
    y = np.asarray(f(u), dtype=np.float64).reshape(-1)
    if y.shape != u.shape:
        raise ValueError(f"f(u) must have shape {u.shape}, got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("f(u) has non-finite values on the interval")
    return y


def _eval_weight(weight: Weight | None, u: np.ndarray) -> np.ndarray:
    if weight is None:
        return np.ones_like(u)
    w = np.asarray(weight(u), dtype=np.float64).reshape(-1)
    if w.shape != u.shape:
        raise ValueError(f"weight(u) must have shape {u.shape}, got {w.shape}")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weight(u) must be positive and finite on the interval")
    return w


def _weighted_system(basis: Basis, f: Target, weight: Weight | None, u: np.ndarray):
    """``(u, B / s, y / s)`` for the minimax methods, ``s = weight(u)``.

    Points where every basis function and ``f`` vanish (``u = 0`` with a ``u^factor`` basis and
    a residual ``f = O(u^factor)``) carry no information, as the error there is 0 whatever the
    coefficients: they are left out, so that a weight vanishing there too (a relative error)
    is never evaluated at them.
    """
    B, y = _eval_basis(basis, u), _eval_target(f, u)
    B_scale = float(np.max(np.abs(B)))
    f_scale = float(np.max(np.abs(y)))
    dead = (np.max(np.abs(B), axis=1) <= DEGENERATE_RTOL * B_scale) & (
        np.abs(y) <= 64 * EPS * f_scale
    )
    if dead.any():
        u, B, y = u[~dead], B[~dead], y[~dead]
    s = _eval_weight(weight, u)
    return u, B / s[:, None], y / s


def _lstsq(B: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with the columns equilibrated (scaled to max-abs 1), solved by SVD."""
    s = np.max(np.abs(B), axis=0)
    s = np.where(s > 0, s, 1.0)
    c, *_ = np.linalg.lstsq(B / s, y, rcond=None)
    return c / s


def evaluate(basis: Basis, coeffs, u) -> np.ndarray:
    """``p(u) = basis(u) @ coeffs`` in float64."""
    u = np.asarray(u, dtype=np.float64).reshape(-1)
    return _eval_basis(basis, u) @ np.asarray(coeffs, dtype=np.float64)


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
    Points where the basis and ``f`` all vanish are left out (see ``irls``).
    """
    _, B, y = _weighted_system(basis, f, weight, sample_points(a, b, points, kind))
    c = np.asarray(coeffs, np.float64).reshape(-1, 1)
    return float(np.max(np.abs(_residual_matrix(B, y, c))))


# ---------------------------------------------------------------- least squares and IRLS


def least_squares(
    basis: Basis,
    f: Target,
    a: float,
    b: float,
    points: int = 2000,
    weights=None,
    *,
    kind: str = "chebyshev",
) -> np.ndarray:
    """Discrete least squares: ``argmin_c sum_i w_i (f(u_i) - sum_k c_k phi_k(u_i))^2``.

    ``u_i``: ``points`` Chebyshev-Lobatto points of ``[a, b]`` (``kind``; see
    ``sample_points`` for the choice). ``weights``: the least-squares weights ``w_i >= 0``,
    an array of shape ``(points,)`` or a callable ``u -> w(u)``; ``None`` for ``w_i = 1``.
    (A minimax error scale ``s(u)`` corresponds to ``w = 1 / s^2``.) Solved as
    ``min ||sqrt(W) (B c - y)||_2`` by SVD (``numpy.linalg.lstsq``) with equilibrated columns.
    """
    u = sample_points(a, b, points, kind)
    B, y = _eval_basis(basis, u), _eval_target(f, u)
    if weights is not None:
        w = np.asarray(weights(u) if callable(weights) else weights, np.float64).reshape(-1)
        if w.shape != u.shape or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError(f"weights must be {u.shape[0]} finite values >= 0")
        sw = np.sqrt(w)
        B, y = B * sw[:, None], y * sw
    return _lstsq(B, y)


def irls(
    basis: Basis,
    f: Target,
    a: float,
    b: float,
    points: int = 20000,
    iters: int = 35,
    weight: Weight | None = None,
    *,
    kind: str = "chebyshev",
) -> np.ndarray:
    """Lawson's IRLS towards the discrete minimax fit ``min_c max_i |(f - p)(u_i) / s(u_i)|``.

    ``s`` = ``weight`` (an error scale, 1 by default). With ``B_ik = phi_k(u_i) / s(u_i)`` and
    ``y_i = f(u_i) / s(u_i)``: start from ``nu = 1``; each iteration solves the weighted least
    squares ``min sum_i nu_i (y_i - B_i c)^2``, then sets ``nu_i <- nu_i |y_i - B_i c|`` and
    renormalizes ``nu`` to mean 1 (``fit._solve_irls``). The weights concentrate on the points
    of largest error, and the iterates converge (linearly) to the discrete minimax solution on
    the grid of ``points`` Chebyshev-Lobatto points (``kind``), which for a dense grid is close
    to the continuous minimax fit of ``remez``. Grid points where every basis function and
    ``f`` vanish (``u = 0`` for a ``u^factor`` basis and a residual ``O(u^factor)``) are left
    out: the error there is 0 whatever ``c``, and a relative weight may vanish there too.
    """
    _, B, y = _weighted_system(basis, f, weight, sample_points(a, b, points, kind))
    scale = np.max(np.abs(B), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return fit._solve_irls(B / scale, y, iters) / scale


# ---------------------------------------------------------------- endpoint-constrained LS


def _endpoint_constraints(basis: Basis, f: Target, a: float, b: float, B_scale: float):
    """Rows ``phi(e)`` and values ``f(e)`` at e = a, b; splits off the degenerate ones."""
    ends = np.array([a, b])
    C, d = _eval_basis(basis, ends), _eval_target(f, ends)
    vanishing = np.max(np.abs(C), axis=1) <= DEGENERATE_RTOL * B_scale
    return ends, C, d, vanishing


def endpoint_ls(
    basis: Basis,
    f: Target,
    a: float,
    b: float,
    points: int = 2000,
    weights=None,
    *,
    kind: str = "chebyshev",
) -> np.ndarray:
    """Least squares subject to the approximant matching ``f`` exactly at ``a`` and ``b``.

    The paper's endpoint-constrained least squares writes the polynomial in ``t`` in [0, 1] as
    ``f(a) (1 - t) + f(b) t + sum_{j>=2} d_j (t^j - t)``: basis terms that vanish at both
    ends, so the two endpoint values are exact whatever the ``d_j``. For a general basis this
    is the equality-constrained least squares

        min_c || sqrt(W) (B c - y) ||_2   subject to   C c = d,
        C = [phi(a); phi(b)],  d = [f(a), f(b)],

    solved by the null-space method: ``C = U S V^T`` (SVD), a particular solution
    ``c0 = V S^+ U^T d``, the null space ``N`` (the last ``m - rank(C)`` columns of ``V``),
    ``c = c0 + N z`` with ``z`` the unconstrained least squares of ``(B N) z = y - B c0``,
    then one step of iterative refinement of ``C c = d``. Same points and ``weights`` as
    ``least_squares``. Only the monomial space matters: with ``phi_k = t^k``, k = 0..n, the
    result equals the explicit construction above (``tests/test_methods.py``).

    Degenerate constraints: when every basis function vanishes at an endpoint (a row of
    ``C`` at most ``1e-13`` times the largest basis value on the interval, e.g. a ``u^2``
    factor at ``a = 0``), the constraint there reads ``0 = f(e)``: it is dropped, and it holds
    automatically if ``f(e) = 0``; otherwise no coefficients can match ``f`` there and a
    ``ValueError`` is raised. A rank-deficient ``C`` (two dependent rows, or ``m = 1``) is
    accepted when consistent (the redundant constraint is dropped), else ``ValueError``. With
    ``m = rank(C)`` the result is the interpolant.
    """
    u = sample_points(a, b, points, kind)
    B, y = _eval_basis(basis, u), _eval_target(f, u)
    if weights is not None:
        w = np.asarray(weights(u) if callable(weights) else weights, np.float64).reshape(-1)
        if w.shape != u.shape or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError(f"weights must be {u.shape[0]} finite values >= 0")
        sw = np.sqrt(w)
        B, y = B * sw[:, None], y * sw
    B_scale = float(np.max(np.abs(_eval_basis(basis, u))))
    f_scale = max(float(np.max(np.abs(_eval_target(f, u)))), np.finfo(np.float64).tiny)
    ends, C_all, d_all, vanishing = _endpoint_constraints(basis, f, a, b, B_scale)
    for e, dv, van in zip(ends, d_all, vanishing, strict=True):
        if van and abs(dv) > 64 * EPS * f_scale:
            raise ValueError(
                f"every basis function vanishes at u = {e!r} but f({e!r}) = {dv!r}: "
                "no coefficients can match f there"
            )
    C, d = C_all[~vanishing], d_all[~vanishing]
    m = B.shape[1]
    if C.shape[0] == 0:
        return _lstsq(B, y)
    # Equilibrate columns of B and C together (same unknowns).
    col = np.maximum(np.max(np.abs(B), axis=0), np.max(np.abs(C), axis=0))
    col = np.where(col > 0, col, 1.0)
    Bs, Cs = B / col, C / col
    U, S, Vt = np.linalg.svd(Cs)
    rank = int(np.sum(S > S[0] * m * EPS))
    Ur, Sr, Vr = U[:, :rank], S[:rank], Vt[:rank].T
    c0 = Vr @ ((Ur.T @ d) / Sr)
    if np.max(np.abs(Cs @ c0 - d)) > 1e3 * EPS * max(f_scale, np.max(np.abs(d))):
        raise ValueError("the endpoint constraints are inconsistent for this basis")
    N = Vt[rank:].T
    if N.shape[1] == 0:
        cs = c0
    else:
        z = _lstsq(Bs @ N, y - Bs @ c0)
        cs = c0 + N @ z
    cs = cs + Vr @ ((Ur.T @ (d - Cs @ cs)) / Sr)  # refinement: C c = d to rounding
    return cs / col


# ---------------------------------------------------------------- Remez exchange


@dataclass
class RemezResult:
    """The outcome of ``remez``.

    ``coeffs``: the minimax coefficients; ``error``: the levelled error ``|E|`` of the last
    reference (a lower bound of the minimax error, by de la Vallee Poussin); ``max_error``: the
    largest ``|(f - p) / weight|`` found on the grid and at the refined extrema (an upper-bound
    estimate; at convergence the two agree to ``tol``); ``extrema``: the ``m + 1`` alternation
    points of the final error curve; ``extrema_errors``: the signed errors there;
    ``equioscillation_ok``: the alternation theorem's certificate (see ``remez``);
    ``interval``: the interval worked on (``[a, b]``, or with a degenerate endpoint moved in).
    """

    coeffs: np.ndarray
    error: float
    max_error: float
    extrema: np.ndarray
    extrema_errors: np.ndarray
    iterations: int
    converged: bool
    equioscillation_ok: bool
    interval: tuple[float, float]
    history: list[tuple[float, float]] = field(default_factory=list)  # (|E|, max error)


def alternations(e, rtol: float = 0.01) -> int:
    """How many times a sampled error curve ``e`` reaches its maximum magnitude with
    alternating signs: the length of the longest alternating sequence of local extrema (one
    per run of constant sign) whose magnitude is within ``rtol`` of ``max |e|``. A minimax fit
    with ``m`` coefficients has ``m + 1`` (the alternation theorem); a least-squares fit
    usually has one or two."""
    e = np.asarray(e, np.float64).ravel()
    nz = np.flatnonzero(e != 0)
    if nz.size == 0:
        return 0
    sg = np.sign(e[nz])
    starts = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]])
    ends = np.r_[starts[1:], nz.size]
    peaks = np.array([np.max(np.abs(e[nz[a:b]])) for a, b in zip(starts, ends, strict=True)])
    signs = sg[starts]
    big = signs[peaks >= (1.0 - rtol) * float(np.max(peaks))]
    return int(1 + np.count_nonzero(big[1:] != big[:-1]))


class _ErrorCurve:
    """``e(u) = (f(u) - basis(u) @ c) / weight(u)`` on a fixed grid, with refinement."""

    def __init__(self, basis, f, weight, lo, hi, grid_points):
        self.basis, self.f, self.weight = basis, f, weight
        self.u = sample_points(lo, hi, grid_points, "chebyshev")
        s = _eval_weight(weight, self.u)
        self.B = _eval_basis(basis, self.u) / s[:, None]
        self.y = _eval_target(f, self.u) / s

    def at(self, x: np.ndarray, c: np.ndarray) -> np.ndarray:
        s = _eval_weight(self.weight, x)
        return (_eval_target(self.f, x) - _eval_basis(self.basis, x) @ c) / s

    def noise(self, c: np.ndarray) -> float:
        """Rounding level of the computed errors: 16 eps (|y| + |B| |c|), worst over the grid."""
        return 16 * EPS * float(np.max(np.abs(self.y) + np.abs(self.B) @ np.abs(c)))

    def extrema(self, c: np.ndarray, golden_iters: int = 60):
        """Alternating local extrema of e: one per maximal run of constant sign on the grid
        (points within the rounding noise carry no sign), each refined by golden-section
        search for the maximum of sign * e between its grid neighbours; the refined point is
        kept only if it is better than the grid point."""
        e = self.y - self.B @ c
        nz = np.flatnonzero(np.abs(e) > self.noise(c))
        if nz.size == 0:
            return np.empty(0), np.empty(0)
        sg = np.sign(e[nz])
        starts = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]])
        ends = np.r_[starts[1:], nz.size]
        idx = np.array(
            [
                nz[s0 + int(np.argmax(np.abs(e[nz[s0:s1]])))]
                for s0, s1 in zip(starts, ends, strict=True)
            ]
        )
        sign = np.sign(e[idx])
        n = self.u.size
        lo = self.u[np.maximum(idx - 1, 0)]
        hi = self.u[np.minimum(idx + 1, n - 1)]
        xs, vs = _golden_max(lambda x: sign * self.at(x, c), lo, hi, golden_iters)
        better = vs > sign * e[idx]
        pts = np.where(better, xs, self.u[idx])
        vals = np.where(better, sign * vs, e[idx])
        if np.any(np.diff(pts) <= 0):  # overlapping brackets: keep the grid points
            pts, vals = self.u[idx], e[idx]
        return pts, vals


def _golden_max(g, lo, hi, iters):
    """Vectorized golden-section search for the maxima of ``g`` on ``[lo_i, hi_i]``."""
    r = (math.sqrt(5.0) - 1.0) / 2.0
    lo, hi = lo.astype(np.float64).copy(), hi.astype(np.float64).copy()
    x1, x2 = hi - r * (hi - lo), lo + r * (hi - lo)
    g1, g2 = g(x1), g(x2)
    for _ in range(iters):
        left = g1 > g2  # the maximum is in [lo, x2]
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        keep = np.where(left, x1, x2)
        gkeep = np.where(left, g1, g2)
        new = np.where(left, hi - r * (hi - lo), lo + r * (hi - lo))
        gnew = g(new)
        x1, g1 = np.where(left, new, keep), np.where(left, gnew, gkeep)
        x2, g2 = np.where(left, keep, new), np.where(left, gkeep, gnew)
    best = g1 >= g2
    return np.where(best, x1, x2), np.where(best, g1, g2)


def _select_reference(pts, vals, m1: int, level: float | None):
    """``m1`` consecutive alternating extrema containing the global maximum of ``|e|``.

    Extrema below the current levelled error ``level`` are dropped first (merging the
    neighbours of equal sign, the larger kept), as long as ``m1`` remain; among the windows of
    ``m1`` consecutive extrema that contain the global maximum, the one with the largest
    smallest ``|e|`` is taken. ``None`` if fewer than ``m1`` alternating extrema exist.
    """
    if level is not None:
        keep = np.abs(vals) >= level * (1 - 1e-9)
        if keep.sum() >= m1:
            p, v = pts[keep], vals[keep]
            mp, mv = [p[0]], [v[0]]
            for pi, vi in zip(p[1:], v[1:], strict=True):
                if np.sign(vi) == np.sign(mv[-1]):
                    if abs(vi) > abs(mv[-1]):
                        mp[-1], mv[-1] = pi, vi
                else:
                    mp.append(pi)
                    mv.append(vi)
            if len(mp) >= m1:
                pts, vals = np.array(mp), np.array(mv)
    if pts.size < m1:
        return None
    k = int(np.argmax(np.abs(vals)))
    starts = range(max(0, k - m1 + 1), min(k, pts.size - m1) + 1)
    s = max(starts, key=lambda s0: (np.min(np.abs(vals[s0 : s0 + m1])), -s0))
    return pts[s : s + m1]


def _single_exchange(ref, ref_err, x, ex):
    """The first Remez algorithm's exchange of one point: put ``x`` (error ``ex``) into the
    reference in place of a neighbour of the same error sign, keeping the signs alternating."""
    ref, ref_err = list(ref), list(ref_err)
    same = lambda i: np.sign(ref_err[i]) == np.sign(ex)  # noqa: E731
    if x < ref[0]:
        if same(0):
            ref[0] = x
        else:
            ref = [x, *ref[:-1]]
    elif x > ref[-1]:
        if same(-1):
            ref[-1] = x
        else:
            ref = [*ref[1:], x]
    else:
        j = int(np.searchsorted(ref, x)) - 1
        j = min(max(j, 0), len(ref) - 2)
        ref[j if same(j) else j + 1] = x
    return np.array(ref)


def remez(
    basis: Basis,
    f: Target,
    a: float,
    b: float,
    weight: Weight | None = None,
    max_iter: int = 50,
    tol: float = 1e-12,
    *,
    grid_points: int = 8193,
    equioscillation_rtol: float = 1e-6,
    start: str = "irls",
) -> RemezResult:
    """Minimax fit ``min_c max_{u in [a,b]} |(f(u) - sum_k c_k phi_k(u)) / weight(u)|``.

    The second Remez algorithm for a Haar (Chebyshev) system of ``m`` functions, in which the
    best approximation is characterized by ``m + 1`` points ``x_0 < ... < x_m`` where the
    weighted error takes its maximum magnitude with alternating signs (the alternation
    theorem). Each iteration:

    1. on the reference ``x_0 < ... < x_m``, solve the ``(m+1) x (m+1)`` linear system
       ``sum_k c_k phi_k(x_i) / w(x_i) + (-1)^i E = f(x_i) / w(x_i)`` for ``c`` and the
       levelled error ``E``;
    2. locate the local extrema of the error curve: on a dense grid (``grid_points``
       Chebyshev-Lobatto points), one extremum per maximal run of constant sign, each refined
       by golden-section search between its grid neighbours;
    3. exchange: the new reference is ``m + 1`` consecutive alternating extrema containing
       the global maximum (those below ``|E|`` dropped first); if fewer than ``m + 1`` exist,
       the global maximum is exchanged into the old reference (single-point exchange).

    Stop when the largest error ``max |e|`` and ``|E|`` agree: ``max |e| - |E| <=
    max(tol * max |e|, noise)``, ``noise`` = 16 eps times the magnitude of the terms of the
    error (below that the computed errors are rounding). ``start="irls"``: the first reference
    is the alternation points of 8 IRLS iterations on the grid (a discrete near-minimax fit),
    or Chebyshev-Lobatto points if that fails; ``start="chebyshev"``: the ``m + 1``
    Chebyshev-Lobatto points of the interval. The iterate with the smallest ``max |e|`` is
    returned.

    ``equioscillation_ok``: after the last iteration, the final error curve has ``m + 1``
    (``m`` = number of coefficients) alternating extrema whose magnitudes all lie within
    ``equioscillation_rtol`` (relative) of ``max |e|``.

    Degenerate endpoints: with a ``u^factor`` basis and ``a = 0`` every basis function vanishes
    at 0, the system is not Haar on ``[0, b]`` (only on ``(0, b]``) and the error there is
    ``f(0)`` whatever ``c``. If ``f`` vanishes there too (a residual ``f = O(u^factor)``), the
    endpoint is moved in by ``2^-30 (b - a)`` (``interval`` in the result) and the algorithm
    runs on that Haar interval; the error at the moved endpoint is ``O(2^-30)`` from its limit,
    so the minimax error is the same to far below ``equioscillation_rtol`` (the weight may
    vanish at the degenerate endpoint as well, e.g. ``weight = u^factor`` for a relative error
    of ``f ~ u^factor``, since it is never evaluated there). If ``f`` does not vanish there,
    ``ValueError``.
    """
    a, b = _check_interval(a, b)
    probe = sample_points(a, b, 257, "chebyshev")
    B_scale = float(np.max(np.abs(_eval_basis(basis, probe))))
    f_scale = max(float(np.max(np.abs(_eval_target(f, probe)))), np.finfo(np.float64).tiny)
    ends, _, d_all, vanishing = _endpoint_constraints(basis, f, a, b, B_scale)
    lo, hi = a, b
    shift = 2.0**-30 * (b - a)
    for e, dv, van in zip(ends, d_all, vanishing, strict=True):
        if van:
            if abs(dv) > 64 * EPS * f_scale:
                raise ValueError(
                    f"every basis function vanishes at u = {e!r} but f({e!r}) = {dv!r}: "
                    "the error there is fixed, the problem is not a Haar one"
                )
            if e == a:
                lo = a + shift
            else:
                hi = b - shift

    curve = _ErrorCurve(basis, f, weight, lo, hi, grid_points)
    m = curve.B.shape[1]
    m1 = m + 1
    if grid_points < 4 * m1:
        raise ValueError(f"grid_points must be at least {4 * m1} for {m} basis functions")

    if start not in ("irls", "chebyshev"):
        raise ValueError(f"start must be 'irls' or 'chebyshev', got {start!r}")
    ref = None
    if start == "irls":  # the alternation points of a near-minimax discrete fit
        c = fit._solve_irls(curve.B, curve.y, 8)
        pts, vals = curve.extrema(c)
        ref = _select_reference(pts, vals, m1, None)
    if ref is None:
        ref = sample_points(lo, hi, m1, "chebyshev")

    best = None
    history = []
    level = None
    converged = False
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        s = _eval_weight(weight, ref)
        A = np.empty((m1, m1))
        A[:, :m] = _eval_basis(basis, ref) / s[:, None]
        A[:, m] = (-1.0) ** np.arange(m1)
        rhs = _eval_target(f, ref) / s
        try:
            sol = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError as exc:
            raise RuntimeError(f"singular Remez system at reference {ref}") from exc
        c, E = sol[:m], float(sol[m])
        level = abs(E)
        pts, vals = curve.extrema(c)
        grid_max = float(np.max(np.abs(curve.y - curve.B @ c)))
        emax = max(grid_max, float(np.max(np.abs(vals))) if vals.size else 0.0)
        history.append((level, emax))
        if best is None or emax < best[2]:
            best = (c, level, emax, pts, vals)
        if emax - level <= max(tol * emax, curve.noise(c)):
            converged = True
            break
        new = _select_reference(pts, vals, m1, level)
        if new is None:
            k = int(np.argmax(np.abs(vals)))
            new = _single_exchange(ref, A[:, m] * E, pts[k], vals[k])
        if np.array_equal(new, ref):
            break  # no exchange possible: the error curve cannot be improved further
        ref = new

    c, level, emax, pts, vals = best
    window = _select_reference(pts, vals, m1, None)
    if window is None:
        ok = False
        ext, ext_err = pts, vals
    else:
        sel = np.isin(pts, window)
        ext, ext_err = pts[sel], vals[sel]
        alternating = bool(np.all(np.sign(ext_err[1:]) == -np.sign(ext_err[:-1])))
        level_ok = bool(np.all(np.abs(np.abs(ext_err) - emax) <= equioscillation_rtol * emax))
        ok = alternating and level_ok and ext.size == m1
    return RemezResult(
        coeffs=c,
        error=level,
        max_error=emax,
        extrema=ext,
        extrema_errors=ext_err,
        iterations=iterations,
        converged=converged,
        equioscillation_ok=ok,
        interval=(lo, hi),
        history=history,
    )


# ---------------------------------------------------------------- coefficient rounding


def neighbours(value: float, fmt: str, k: int) -> np.ndarray:
    """The finite values of ``fmt`` within ``k`` ulps (steps) of ``value``, increasing.

    Centred on ``rounding.round_to_format(value, fmt)`` (``value`` itself when representable):
    ``2k + 1`` values, fewer at the ends of the finite range; +0 and -0 count as one value.
    """
    rounding.check_rounding_format(fmt)
    k = int(k)
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    center = rounding.round_to_format(np.array([float(value)]), fmt)
    if not np.isfinite(center[0]):
        raise ValueError(f"{value!r} does not round to a finite {fmt} value")
    o = int(rounding.to_ordered(center, fmt)[0])
    top = rounding.max_ordered(fmt)
    steps = np.arange(max(o - k, -top), min(o + k, top) + 1, dtype=np.int64)
    return rounding.from_ordered(steps, fmt) + 0.0  # -0.0 -> +0.0


@dataclass
class RoundedSearch:
    """The outcome of ``search_rounded``; unpacks as ``(coeffs, max_error)``.

    ``initial_error``: the error of the plainly rounded coefficients; ``evaluations``: the
    number of coefficient vectors whose error was computed (the start included); ``rounds``:
    the sweeps that improved the error; ``moves``: ``(kind, indices, ulp offsets, error)`` per
    improving move ('single' or 'pair'), in order.
    """

    coeffs: np.ndarray
    max_error: float
    initial_error: float
    evaluations: int
    rounds: int
    moves: list = field(default_factory=list)

    def __iter__(self) -> Iterator:
        return iter((self.coeffs, self.max_error))


def _residual_matrix(B: np.ndarray, y: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``y - B @ C`` column by column in a fixed order (independent of how many columns), so
    an error computed in a batch equals the one computed alone, bit for bit."""
    r = np.repeat(y[:, None], C.shape[1], axis=1)
    for k in range(B.shape[1]):
        r -= B[:, k : k + 1] * C[k][None, :]
    return r


def _offsets(radius: int) -> list[int]:
    out = []
    for d in range(1, radius + 1):
        out += [-d, d]
    return out


def search_rounded(
    basis: Basis | None,
    f: Target | None,
    a: float,
    b: float,
    coeffs,
    fmt: str,
    radius: int = 1,
    max_rounds: int = 100,
    error: Callable[[np.ndarray], float] | None = None,
    *,
    points: int = 4001,
    weight: Weight | None = None,
    pairs: bool = True,
) -> RoundedSearch:
    """Coefficients representable in ``fmt``, near ``coeffs``, with a small max error.

    Starts from ``rounding.round_to_format(coeffs, fmt)``, then descends greedily over neighbouring
    representable values: each round first tries, for every coefficient in turn, the values
    within ``radius`` ulps of its current value (the best strictly improving one is taken,
    coefficient by coefficient); when a whole sweep improves nothing and ``pairs`` is set,
    every pair of coefficients moved together by up to ``radius`` ulps each, taking the best
    strictly improving pair. Stops when neither improves, or after ``max_rounds`` sweeps.

    The error of a coefficient vector is ``error(c)`` when given (e.g. the max error of a
    replayed float32 / bfloat16 evaluation; ``basis`` and ``f`` may then be None), otherwise
    ``max |(f - basis @ c) / weight|`` on ``points`` Chebyshev-Lobatto points of ``[a, b]``
    in float64 (as ``max_error`` computes it; points where the basis and ``f`` vanish left
    out). Deterministic: fixed visiting order (coefficients in index order, offsets
    -1, +1, -2, +2, ...), ties keep the earlier candidate, only strict improvements count, and
    the grid errors are computed in the same order whatever the batch. Never worse than plain
    rounding (``max_error <= initial_error``).
    """
    fmt = rounding.check_rounding_format(fmt)
    c0 = rounding.round_to_format(np.asarray(coeffs, np.float64).reshape(-1), fmt)
    if not np.all(np.isfinite(c0)):
        raise ValueError(f"coefficients overflow {fmt}")
    radius = int(radius)
    if radius < 1:
        raise ValueError(f"radius must be >= 1, got {radius}")
    m = c0.size
    if error is None:
        if basis is None or f is None:
            raise ValueError("need basis and f, or an error callable")
        _, B, y = _weighted_system(basis, f, weight, sample_points(a, b, points, "chebyshev"))
        if B.shape[1] != m:
            raise ValueError(f"basis has {B.shape[1]} functions, got {m} coefficients")

        def batch(C: np.ndarray) -> np.ndarray:
            return np.max(np.abs(_residual_matrix(B, y, C)), axis=0)
    else:

        def batch(C: np.ndarray) -> np.ndarray:
            return np.array([float(error(C[:, j].copy())) for j in range(C.shape[1])])

    evaluations = 0

    def evaluate_all(C: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += C.shape[1]
        return batch(C)

    cur = c0.copy()
    cur_err = float(evaluate_all(cur[:, None])[0])
    initial = cur_err
    offs = _offsets(radius)
    moves: list = []
    rounds = 0

    def shifted(value: float, d: int) -> float | None:
        o = int(rounding.to_ordered(np.array([value]), fmt)[0]) + d
        if abs(o) > rounding.max_ordered(fmt):
            return None
        return float(rounding.from_ordered(np.array([o], np.int64), fmt)[0]) + 0.0

    for _ in range(max_rounds):
        improved = False
        for i in range(m):
            cands = [(d, shifted(cur[i], d)) for d in offs]
            cands = [(d, v) for d, v in cands if v is not None]
            if not cands:
                continue
            C = np.repeat(cur[:, None], len(cands), axis=1)
            C[i] = [v for _, v in cands]
            errs = evaluate_all(C)
            j = int(np.argmin(errs))
            if errs[j] < cur_err:
                cur = C[:, j].copy()
                cur_err = float(errs[j])
                moves.append(("single", (i,), (cands[j][0],), cur_err))
                improved = True
        if not improved and pairs and m >= 2:
            cols, tags = [], []
            for i in range(m):
                for k in range(i + 1, m):
                    for di in offs:
                        vi = shifted(cur[i], di)
                        if vi is None:
                            continue
                        for dk in offs:
                            vk = shifted(cur[k], dk)
                            if vk is None:
                                continue
                            col = cur.copy()
                            col[i], col[k] = vi, vk
                            cols.append(col)
                            tags.append(((i, k), (di, dk)))
            if cols:
                C = np.stack(cols, axis=1)
                errs = evaluate_all(C)
                j = int(np.argmin(errs))
                if errs[j] < cur_err:
                    cur = C[:, j].copy()
                    cur_err = float(errs[j])
                    moves.append(("pair", *tags[j], cur_err))
                    improved = True
        if not improved:
            break
        rounds += 1
    return RoundedSearch(
        coeffs=cur,
        max_error=cur_err,
        initial_error=initial,
        evaluations=evaluations,
        rounds=rounds,
        moves=moves,
    )


# ---------------------------------------------------------------- Sollya control

# fpminimax format of each rounding format: Sollya's names, or a precision in bits (bfloat16
# has 8 significant bits; Sollya's integer formats bound the precision, not the exponent).
SOLLYA_FORMATS = {"float64": "D", "float32": "SG", "float16": "HP", "bfloat16": "8"}


def sollya_available() -> bool:
    """Whether the ``sollya`` program is on PATH."""
    return shutil.which("sollya") is not None


@dataclass
class SollyaResult:
    """``fpminimax`` coefficients (aligned with the degrees asked for), as float64 and exactly
    (Sollya's dyadic output), the error ``dirtyinfnorm`` reports (absolute or relative as
    asked; an estimate, not a bound), and the script and output for the record."""

    coeffs: np.ndarray
    exact: list[Fraction]
    error: float
    script: str
    output: str


def _dyadic(x: float) -> str:
    """A float as Sollya's exact dyadic constant ``m b e`` (= m * 2^e)."""
    num, den = Fraction(float(x)).as_integer_ratio()
    return f"{num}b{-(den.bit_length() - 1)}"


def _parse_dyadic(s: str) -> Fraction:
    s = s.strip()
    if "b" in s:
        mant, exp = s.split("b")
        return Fraction(int(mant)) * Fraction(2) ** int(exp)
    return Fraction(int(s))


def sollya_fpminimax(
    expr: str,
    degrees: Sequence[int],
    formats: str | Sequence[str | int],
    interval: tuple[float, float],
    *,
    error: str = "absolute",
    point: str = "floating",
    prec: int = 300,
    timeout: float = 300.0,
    executable: str | None = None,
) -> SollyaResult:
    """Sollya's ``fpminimax``: a polynomial ``sum_{d in degrees} c_d x^d`` with each ``c_d`` in
    its format, near-minimax for ``expr`` on ``interval`` (Brisebarre-Chevillard's lattice
    method), run through the external ``sollya`` program with a generated script.

    ``expr``: a Sollya expression in the free variable ``x`` (e.g. ``"exp(x)"``,
    ``"x*erfc(-x/sqrt(2))/2 - x/2"``); ``degrees``: the monomials; ``formats``: one format
    for all or one per degree, each a name of ``rounding.ROUNDING_FORMATS`` (bfloat16 becomes a
    precision of 8 bits), a Sollya format token (``"DD"``) or an int (bits of precision);
    ``error``: 'absolute' or 'relative'; ``point``: 'floating' or 'fixed' (fixed: the formats are
    numbers of fractional bits); ``prec``: Sollya's working precision in bits. A part fixed
    beforehand (say ``x/2``) is handled by fitting ``expr - x/2`` on the other monomials.
    Interval ends are passed exactly (dyadic). Any Sollya warning (a syntax error, a name other
    than ``x``, ...) is an error: Sollya would go on with a different problem. Raises
    ``RuntimeError`` when Sollya is not installed, fails, warns or times out. A control for the
    lab's own methods: its error is Sollya's estimate, never an exact reference.
    """
    exe = executable or shutil.which("sollya")
    if exe is None or shutil.which(exe) is None:
        raise RuntimeError(
            "sollya is not installed (no 'sollya' on PATH); on Debian/Ubuntu: "
            "apt-get install sollya"
        )
    degrees = [int(d) for d in degrees]
    if not degrees or len(set(degrees)) != len(degrees) or min(degrees) < 0:
        raise ValueError(f"degrees must be distinct non-negative ints, got {degrees}")
    fmts = [formats] * len(degrees) if isinstance(formats, str | int) else list(formats)
    if len(fmts) != len(degrees):
        raise ValueError(f"{len(fmts)} formats for {len(degrees)} degrees")
    tokens = [
        str(SOLLYA_FORMATS.get(fm, fm)) if isinstance(fm, str) else str(int(fm)) for fm in fmts
    ]
    if error not in ("absolute", "relative"):
        raise ValueError(f"error must be 'absolute' or 'relative', got {error!r}")
    if point not in ("floating", "fixed"):
        raise ValueError(f"point must be 'floating' or 'fixed', got {point!r}")
    lo, hi = _check_interval(*interval)
    err_expr = "p - f" if error == "absolute" else "p/f - 1"
    lines = [
        "verbosity = 1!;",  # 1: syntax errors and unbound names are reported (as Warning)
        "display = dyadic!;",
        "tgfree = x;",  # binds the free variable to x before expr is read
        f"prec = {int(prec)}!;",
        f"f = {expr};",
        f"dom = [{_dyadic(lo)}; {_dyadic(hi)}];",
        f"p = fpminimax(f, [|{', '.join(map(str, degrees))}|], [|{', '.join(tokens)}|], dom, "
        f"{point}, {error});",
        *[f'print("TGCOEFF", {d}, coeff(p, {d}));' for d in degrees],
        f'print("TGERR", dirtyinfnorm({err_expr}, dom));',
        'print("TGDONE");',
        "quit;",
    ]
    script = "\n".join(lines) + "\n"
    try:
        proc = subprocess.run(
            [exe], input=script, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"sollya timed out after {timeout} s") from exc
    out = proc.stdout + proc.stderr
    if any(line.startswith("Warning") for line in out.splitlines()):
        # A syntax error is skipped up to the next ';' and an unknown name is taken for the
        # free variable, both silently at verbosity 0: never accept a result after a warning.
        raise RuntimeError(f"sollya reported a problem:\n{script}\n{out}")
    found: dict[int, Fraction] = {}
    err_val = None
    done = False
    try:
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts[:1] == ["TGCOEFF"] and len(parts) == 3:
                found[int(parts[1])] = _parse_dyadic(parts[2])
            elif parts[:1] == ["TGERR"] and len(parts) == 2:
                err_val = float(_parse_dyadic(parts[1]))
            elif parts == ["TGDONE"]:
                done = True
    except ValueError as exc:  # e.g. "error" printed in place of a number
        raise RuntimeError(f"sollya fpminimax failed:\n{script}\n{out}") from exc
    if proc.returncode != 0 or not done or set(found) != set(degrees) or err_val is None:
        raise RuntimeError(f"sollya fpminimax failed (rc {proc.returncode}):\n{script}\n{out}")
    exact = [found[d] for d in degrees]
    return SollyaResult(
        coeffs=np.array([float(q) for q in exact]),
        exact=exact,
        error=err_val,
        script=script,
        output=out,
    )
