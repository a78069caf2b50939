"""The continuous minimax fit of the linear form (``linear_form.py``) by the second Remez
(multi-point exchange) algorithm, and the alternation count of an error curve."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import fit
from .linear_form import (
    EPS,
    Basis,
    Target,
    Weight,
    check_interval,
    endpoint_constraints,
    eval_basis,
    eval_target,
    eval_weight,
    sample_points,
)


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
        s = eval_weight(weight, self.u)
        self.B = eval_basis(basis, self.u) / s[:, None]
        self.y = eval_target(f, self.u) / s

    def at(self, x: np.ndarray, c: np.ndarray) -> np.ndarray:
        s = eval_weight(self.weight, x)
        return (eval_target(self.f, x) - eval_basis(self.basis, x) @ c) / s

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
    a, b = check_interval(a, b)
    probe = sample_points(a, b, 257, "chebyshev")
    B_scale = float(np.max(np.abs(eval_basis(basis, probe))))
    f_scale = max(float(np.max(np.abs(eval_target(f, probe)))), np.finfo(np.float64).tiny)
    ends, _, d_all, vanishing = endpoint_constraints(basis, f, a, b, B_scale)
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
        s = eval_weight(weight, ref)
        A = np.empty((m1, m1))
        A[:, :m] = eval_basis(basis, ref) / s[:, None]
        A[:, m] = (-1.0) ** np.arange(m1)
        rhs = eval_target(f, ref) / s
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
