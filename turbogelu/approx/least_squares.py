"""Least-squares fits of the linear form (``linear_form.py``): plain, iteratively reweighted
towards the discrete minimax fit (IRLS), and with both endpoint values matched exactly."""

from __future__ import annotations

import numpy as np

from . import fit
from .linear_form import (
    EPS,
    Basis,
    Target,
    Weight,
    endpoint_constraints,
    eval_basis,
    eval_target,
    lstsq,
    sample_points,
    weighted_system,
)


def _ls_system(basis: Basis, f: Target, a: float, b: float, points: int, weights, kind: str):
    """``(u, sqrt(W) B, sqrt(W) y)`` on the sample points: the system both least-squares
    methods solve (``weights`` as ``least_squares`` takes them)."""
    u = sample_points(a, b, points, kind)
    B, y = eval_basis(basis, u), eval_target(f, u)
    if weights is not None:
        w = np.asarray(weights(u) if callable(weights) else weights, np.float64).reshape(-1)
        if w.shape != u.shape or not np.all(np.isfinite(w) & (w >= 0)):
            raise ValueError(f"weights must be {u.shape[0]} finite values >= 0")
        sw = np.sqrt(w)
        B, y = B * sw[:, None], y * sw
    return u, B, y


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
    _, B, y = _ls_system(basis, f, a, b, points, weights, kind)
    return lstsq(B, y)


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
    _, B, y = weighted_system(basis, f, weight, sample_points(a, b, points, kind))
    scale = np.max(np.abs(B), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return fit._solve_irls(B / scale, y, iters) / scale


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
    u, B, y = _ls_system(basis, f, a, b, points, weights, kind)
    B_scale = float(np.max(np.abs(eval_basis(basis, u))))
    f_scale = max(float(np.max(np.abs(eval_target(f, u)))), np.finfo(np.float64).tiny)
    ends, C_all, d_all, vanishing = endpoint_constraints(basis, f, a, b, B_scale)
    for e, dv, van in zip(ends, d_all, vanishing, strict=True):
        if van and abs(dv) > 64 * EPS * f_scale:
            raise ValueError(
                f"every basis function vanishes at u = {e!r} but f({e!r}) = {dv!r}: "
                "no coefficients can match f there"
            )
    C, d = C_all[~vanishing], d_all[~vanishing]
    m = B.shape[1]
    if C.shape[0] == 0:
        return lstsq(B, y)
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
        z = lstsq(Bs @ N, y - Bs @ c0)
        cs = c0 + N @ z
    cs = cs + Vr @ ((Ur.T @ (d - Cs @ cs)) / Sr)  # refinement: C c = d to rounding
    return cs / col
