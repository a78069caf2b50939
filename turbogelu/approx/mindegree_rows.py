"""The linear programmes of a minimum-degree case (``mindegree.py``): the rows (constraints on
P at the window inputs), the minimal widening LP, and the float32 Horner error bound the rows
are weighted by.

The rows
--------
For a window input with m = y (even) or u (full), m > 0, success means
``RN32(m P^(z) + x/2) in [lo, hi]``, P^ the float32 Horner value. By monotone rounding this
implies m P^ + x/2 in [lo-, hi+], the real values rounding into [lo, hi] (lo- the midpoint of
lo and the float32 number below it, ties included: a relaxation), i.e.
``pl <= P^(z) <= ph`` with pl = (lo- - x/2)/m, ph = (hi+ - x/2)/m ("float32" rows). Inputs
with the same computed z (x and -x; small u, where z rounds to -1) share P^(z), so their
intervals intersect exactly. "tight" rows use [lo, hi] itself (sufficient: the fit). "exact"
rows are the real-arithmetic problem: exact z = v s - 1, m = u^2 or u, interval [mlo, mhi]
(no float32 anywhere). Rows wider than ``WIDE`` in P (tiny u) are left out (a subset of the
rows is a relaxation, so the lower bound stays valid; the fit is checked on every input).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.polynomial import chebyshev as npcheb
from scipy.optimize import linprog

from . import replay, rounding
from .mindegree_problem import Problem, step32

F32 = np.float32
F64 = np.float64
U32 = 2.0**-24  # float32 unit roundoff
FAMILIES = {"even": ("y", 2), "full": ("u", 1)}
WIDE = 1e3
LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ---------------------------------------------------------------- rows


def program_scale(family: str, fit_interval: float) -> float:
    """The program's s: fl(2 / L^2) (even family) or fl(2 / L) (full family), float32."""
    var, _ = FAMILIES[family]
    end = fit_interval if var == "u" else fit_interval**2
    return float(rounding.round_to_format(2.0 / end, "float32"))


def program_parts(x32: np.ndarray, family: str, scale: float):
    """(z, m) as the float32 program computes them: u = |x|, y = fl(u*u), z = fma(v, s, -1),
    and the multiplier m of P (y or u)."""
    u = np.abs(x32.astype(F32))
    y = (u * u).astype(F32)
    v = y if family == "even" else u
    z = replay.fma32(v, F32(scale), F32(-1.0)).astype(F64)
    return z, (y if family == "even" else u).astype(F64)


@dataclass
class Rows:
    """Constraints P(z) <= ph (upper rows) and P(z) >= pl (lower rows), with the input index
    each comes from (for the exact certificate)."""

    kind: str
    z_up: np.ndarray
    ph: np.ndarray
    i_up: np.ndarray
    z_lo: np.ndarray
    pl: np.ndarray
    i_lo: np.ndarray
    impossible: np.ndarray  # inputs no P can serve (m = 0 and x/2 outside the interval)

    @property
    def n(self) -> int:
        return self.z_up.size + self.z_lo.size


def _group_extreme(key, val, idx, take_max: bool):
    """Per distinct key: the extreme value and the index attaining it."""
    order = np.lexsort((-val if take_max else val, key))
    k = key[order]
    first = np.ones(k.size, bool)
    first[1:] = k[1:] != k[:-1]
    sel = order[first]
    return key[sel], val[sel], idx[sel]


def rows(prob: Problem, family: str, fit_interval: float, kind: str) -> Rows:
    """The LP rows of the window inputs (see the module docstring).

    kind "float32": z and m as the program computes them, interval = the real values whose
    float32 rounding lies in [lo, hi] (closed, relaxed at ties), rows with the same z merged.
    kind "tight": the same z and m, interval [lo, hi] itself. kind "exact": exact z and
    m = u^2 or u, interval = the real rounding cell [mlo, mhi]; of the rows with the same
    float64 z only the extreme ones are kept (a subset: a relaxation).
    Rows whose interval is wider than WIDE are left out (a relaxation).
    """
    idx = np.flatnonzero(prob.window)
    x32 = prob.x32[idx]
    x = prob.x[idx]
    s = program_scale(family, fit_interval)
    if kind == "exact":
        u = np.abs(x)
        v = u * u if family == "even" else u
        z = v * s - 1.0
        m = v
        L, H = prob.mlo[idx], prob.mhi[idx]
    else:
        z, m = program_parts(x32, family, s)
        if kind == "float32":
            L = 0.5 * (step32(prob.lo[idx], up=False) + prob.lo[idx])
            H = 0.5 * (step32(prob.hi[idx], up=True) + prob.hi[idx])
        elif kind == "tight":
            L, H = prob.lo[idx], prob.hi[idx]
        else:
            raise ValueError(f"kind must be 'float32', 'tight' or 'exact', got {kind!r}")
    half = 0.5 * x
    zero = m == 0
    impossible = idx[zero & ~((L <= half) & (half <= H))]
    ok = ~zero
    with np.errstate(invalid="ignore", over="ignore"):
        pl = (L[ok] - half[ok]) / m[ok]
        ph = (H[ok] - half[ok]) / m[ok]
    z, ii = z[ok], idx[ok]
    zu, phu, iu = _group_extreme(z, ph, ii, take_max=False)
    zl, pll, il = _group_extreme(z, pl, ii, take_max=True)
    if kind != "exact":  # same z: the two rows constrain one computed value
        narrow = (phu - pll) <= WIDE
        zu, phu, iu, zl, pll, il = (
            zu[narrow],
            phu[narrow],
            iu[narrow],
            zl[narrow],
            pll[narrow],
            il[narrow],
        )
    else:
        # rows of one float64 z come from different exact z: keep both, drop the wide ones
        # by the full interval of their own input
        wu = (H - L)[np.searchsorted(idx, iu)] / m[np.searchsorted(idx, iu)]
        wl = (H - L)[np.searchsorted(idx, il)] / m[np.searchsorted(idx, il)]
        zu, phu, iu = zu[wu <= WIDE], phu[wu <= WIDE], iu[wu <= WIDE]
        zl, pll, il = zl[wl <= WIDE], pll[wl <= WIDE], il[wl <= WIDE]
    return Rows(kind, zu, phu, iu, zl, pll, il, impossible)


def exact_row(prob: Problem, family: str, fit_interval: float, kind: str, i: int, upper: bool):
    """(z, bound) of one row as exact rationals."""
    s = Fraction(program_scale(family, fit_interval))
    x = Fraction(float(prob.x[i]))
    if kind == "exact":
        u = abs(x)
        v = u * u if family == "even" else u
        z, m = v * s - 1, v
        bound = Fraction(float(prob.mhi[i] if upper else prob.mlo[i]))
    else:
        zf, mf = program_parts(prob.x32[i : i + 1], family, float(s))
        z, m = Fraction(float(zf[0])), Fraction(float(mf[0]))
        if kind == "float32":
            e = float(prob.hi[i] if upper else prob.lo[i])
            nb = float(step32(np.array([e]), up=upper)[0])
            bound = (Fraction(e) + Fraction(nb)) / 2
        else:
            bound = Fraction(float(prob.hi[i] if upper else prob.lo[i]))
    return z, (bound - x / 2) / m


# ---------------------------------------------------------------- LPs


def _cheb(z, n):
    return npcheb.chebvander(np.asarray(z, F64), n - 1)


@functools.cache
def cheb2mono(n: int) -> np.ndarray:
    """M with monomial coefficients c = M a for Chebyshev coefficients a."""
    M = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        c = npcheb.cheb2poly(e)
        M[: c.size, j] = c
    return M


def linprog_highs(c, A, b, A_eq=None, b_eq=None):
    """HiGHS (dual simplex; the interior point method with crossover when the simplex reports
    numerical trouble)."""
    for method in ("highs-ds", "highs-ipm"):
        res = linprog(
            c,
            A_ub=A,
            b_ub=b,
            A_eq=A_eq,
            b_eq=b_eq,
            bounds=[(None, None)] * len(c),
            method=method,
            options=LP_OPTIONS,
        )
        if res.status in (0, 2, 3):  # optimal, infeasible, unbounded
            return res
    return res


def scaled_rows(r: Rows, n: int, w_up, w_lo, a_ref):
    """The rows as [A | b] with a = a_ref + eps * delta: A delta <= b + s per row, both sides
    divided by the row's weight w (eps = the median weight), for conditioning."""
    eps = float(np.median(np.concatenate([w_up, w_lo])))
    Tu, Tl = _cheb(r.z_up, n), _cheb(r.z_lo, n)
    if a_ref is None:  # weighted least squares through both ends of every row
        B = np.vstack([Tu / w_up[:, None], Tl / w_lo[:, None]])
        a_ref = np.linalg.lstsq(B, np.concatenate([r.ph / w_up, r.pl / w_lo]), rcond=None)[0]
    a_ref = np.asarray(a_ref, F64)
    A = np.vstack([Tu * (eps / w_up)[:, None], -Tl * (eps / w_lo)[:, None]])
    b = np.concatenate([(r.ph - Tu @ a_ref) / w_up, (Tl @ a_ref - r.pl) / w_lo])
    return A, b, a_ref, eps


def min_widening(r: Rows, n: int, w_up, w_lo, a_ref=None, fixed=None):
    """min s subject to pl - s w <= P(z) <= ph + s w (and monomial coefficients c_j fixed at
    the values of the dict ``fixed``); returns (s, chebyshev a, res)."""
    A, b, a_ref, eps = scaled_rows(r, n, w_up, w_lo, a_ref)
    A = np.hstack([A, -np.ones((A.shape[0], 1))])
    obj = np.zeros(n + 1)
    obj[-1] = 1.0
    if fixed:
        M = cheb2mono(n)
        ks = sorted(fixed)
        A_eq = np.hstack([eps * M[ks], np.zeros((len(ks), 1))])
        b_eq = np.array([fixed[k] - M[k] @ a_ref for k in ks])
        res = linprog_highs(obj, A, b, A_eq, b_eq)
    else:
        res = linprog_highs(obj, A, b)
    if res.status != 0:
        return math.nan, None, res
    return float(res.x[-1]), a_ref + eps * res.x[:n], res


# ---------------------------------------------------------------- the float32 error bound


def horner_gamma(d: int) -> float:
    return d * U32 / (1.0 - d * U32) if d else 0.0


def _partials(c, z):
    """r_j(z) = sum_{k>=j} c_k z^(k-j) and R_j = the same with |c_k|, |z|: (d+1, len(z))."""
    c = np.asarray(c, F64)
    d = c.size - 1
    r = np.empty((d + 1, z.size))
    R = np.empty((d + 1, z.size))
    r[d], R[d] = c[d], abs(c[d])
    az = np.abs(z)
    for j in range(d - 1, -1, -1):
        r[j] = r[j + 1] * z + c[j]
        R[j] = R[j + 1] * az + abs(c[j])
    return r, R


def horner_bound(c, z, D=None, zeta: float = 1.0):
    """Bound on |P_hat(z) - P(z)| for float32 Horner with FMA (``mindegree_proof``'s docstring),
    for every coefficient vector within D_k of c (D = None: c itself), without the underflow
    term."""
    d = len(c) - 1
    if d == 0:
        return np.zeros(np.size(z))
    g = horner_gamma(d)
    z = np.asarray(z, F64)
    r, R = _partials(c, z)
    az = np.abs(z)
    pw = az[None, :] ** np.arange(d)[:, None]  # |z|^j, j < d
    out = U32 * np.sum(pw * (np.abs(r[:d]) + g * R[:d]), axis=0)
    if D is not None:
        D = np.asarray(D, F64)
        tail = np.array([sum(D[k] * zeta ** (k - j) for k in range(j, d + 1)) for j in range(d)])
        out = out + U32 * (1 + g) * np.sum(pw * tail[:, None], axis=0)
    return out


def row_weights(r: Rows, cref, floor_rel=1e-6):
    d = len(cref) - 1
    if d == 0:
        return np.ones(r.z_up.size), np.ones(r.z_lo.size)
    wu = horner_bound(cref, r.z_up)
    wl = horner_bound(cref, r.z_lo)
    fl = floor_rel * max(wu.max(initial=0), wl.max(initial=0)) + 1e-30
    return np.maximum(wu, fl), np.maximum(wl, fl)


def first_row_weights(r: Rows, n):
    mag = lambda a, b: U32 * n * np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-3)  # noqa: E731
    return mag(r.ph, r.ph), mag(r.pl, r.pl)
