"""Minimum polynomial degrees, proven: the smallest P for which a float32 ``x/2 + p(|x|)``
kernel is within 1 ulp of the correctly rounded value (or correctly rounded) on every
bfloat16 / float16 input outside a listed set of inputs no such kernel can be relied on for.

numpy / scipy (HiGHS) / mpmath / fractions only; no torch.

The program (what "evaluated in float32" means here)
----------------------------------------------------
For a target f of the "x/2 + even" targets (gelu, gelu_tanh, silu; ``targets.py``) and every
finite input x of the format (as float32), with u = |x|:

* family ``"even"`` (TurboGeLU's form, PolySpec variable "y", factor 2):
  ``y = fl(u*u)``, ``z = fma(y, s, -1)``, ``s = fl(2 / L^2)``, ``out = fma(y, P(z), fl(x/2))``:
  p(u) = u^2 P(u^2), a polynomial of degree 2d + 2 in u with only even powers;
* family ``"full"`` (PolySpec variable "u", factor 1): ``z = fma(u, s, -1)``, ``s = fl(2/L)``,
  ``out = fma(u, P(z), fl(x/2))``: p(u) = u P(u), degree d + 1 in u, every power but u^0 (a
  constant term cannot vanish at x -> 0 in float32 arithmetic: fl(x/2) + c is wrong for tiny x
  unless c is 0 to about 2^-140);

with ``P(z) = sum_{k<=d} c_k z^k`` by Horner's rule with fused multiply-adds (c_k float32),
z in [-1, 1] over the window, ``|x| <= L_c`` the window (the clamp) and the ReLU asymptote
(x, or -0.0) beyond it; L, the fit interval that sets the evaluation variable, is L_c unless
given. The result is rounded to the format (nearest even), as the report does. This is
exactly ``polyspec.replay`` of the matching PolySpec (program "generic", shift, float32;
``replay32`` here is a faster copy, bit-identical, which the results check). "Degree" below
is d, the degree of P in z; ``MinDegreeResult.degree_in_u`` is the degree of p in |x|.

Acceptable outputs
------------------
CR(x) is the correctly rounded f(x) (``report.reference_table``: float64, mpmath near
midpoints). Criterion ``"faithful"``: the format values at most 1 step (``ulp_distance``) from
CR(x); ``"correct"``: CR(x) only. ``rounding_interval`` turns that set into the real interval
[mlo, mhi] between the rounding boundaries (midpoints) beyond it and the float32 interval
[lo, hi] of the float32 outputs that round into it: a boundary is a float32 number and a tie
there goes to the even neighbour, so lo is the boundary itself when the set's end value is
even, and the next float32 number inside otherwise (no margin is needed: both ends are exact
and closed).

Excluded inputs (``exclusion_classes``; disjoint, in this order; counts in ``class_counts``)
-----------------------------------------------------------------------------------------------
1. ``tail``: x < 0 and ulp32(x/2) > ulp_fmt(CR(x)). Here f(x) = x/2 + p(u) cancels: half an
   ulp of x/2 in float32 (the resolution of the final add) is more than half an ulp of the
   result in the format, so whether the float32 sum lands in the acceptable set is decided
   by the float32 grid near |x|/2, not by the polynomial. For the unfused x/2 + q with q a
   float32 number, ``tail_reachability`` counts the float32 q that work, exactly: for GELU in
   bfloat16 (faithful) 190 of the 205 excluded tail inputs have none at all (no such kernel
   can get them right), 11 have one and 4 have two; in float16 103 of 392 have none and 288
   have exactly one. It includes the inputs where the clamp returns -0.0 but CR(x) is a
   nonzero number further than the criterion allows from 0 ("asymptote_unacceptable"; for
   GELU every excluded tail input is of this kind: the tail starts beyond the clamp).
2. ``tie``: f(x) exactly on an end of the acceptable interval (mpmath to 400 digits, as
   ``rounding.correctly_rounded`` decides ties). None for GELU; the dyadic toy polynomial of
   the tests has some.
3. ``near_tie``: not a tie, and f(x) (float64 reference, relative error ~1e-16) within
   N = ``near_tie_ulps`` units ulp32(x/2) of an end of the acceptable interval. The unit is
   the float32 resolution of the final sum: every x/2 + p kernel rounds p (at least
   ulp32(p)/2 <= ulp32(x/2)/2, as |p| <= |x|/2 for these targets) and the sum (at most
   ulp32(result)/2 <= ulp32(x/2)); Horner's rule adds about as much again, so N = 4 (the
   default) is the error budget of the evaluation. With "correct" these are the near-ties;
   with "faithful" the ends lie a format ulp beyond CR's cell, so only inputs where the
   format's ulp is comparable with float32's are caught: the edge of the tail.
   The minimum degree depends on N (GELU, bfloat16, faithful, even: 8 for N <= 1, 7 for
   N = 4, which excludes 10 more inputs); notebooks/09_min_degree.ipynb computes the table for
   N = 4 and N = 0 with every exclusion counted (results/09_min_degree.json, the paper).

Class members beyond the clamp whose asymptote is acceptable are served and not excluded
(they are checked like any other input).

The clamp
---------
L_c is the largest |x| of the non-excluded inputs whose asymptote value is not acceptable.
A kernel with clamp L' < L_c returns the asymptote at that input, which is wrong; with
L' >= L_c its window holds every non-excluded input with |x| <= L_c and more. So every valid
kernel must serve the window inputs of L_c (and serving them with clamp L_c suffices): the
problem at L_c is necessary and sufficient, and infeasibility there is infeasibility for
every clamp (for the float32 proof: with the evaluation variable of fit interval L, below).

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

Lower bound: degree d infeasible (``prove_infeasible``)
--------------------------------------------------------
Float32 error of P: with r_j(z) = sum_{k>=j} c_k z^(k-j) (Horner's partial values), R_j the
same with |c_k|, |z|, u = 2^-24, gamma_d = d u / (1 - d u), each FMA's error is at most
u |its exact value| + 2^-150 (subnormal results), so
``|P^(z) - P(z)| <= sigma(c, z) = u sum_{j<d} |z|^j (|r_j(z)| + gamma_d R_j(z)) + eta``,
eta = d zeta^d 2^-149, zeta = max(1, max|z|) (a success has finite outputs, so nothing
overflowed). Let F_s be the real coefficient vectors with pl_i - s w_i <= P(z_i) <= ph_i + s w_i
on every row, for positive row weights w (the shape of sigma for a reference fit). A
successful c lies in F_{s(c)}, s(c) = max_i sigma(c, z_i) / w_i. Then:

1. s_lb: an exact lower bound on min{s : F_s nonempty} (LP; certificate below);
2. coefficient bounds: for every s and c in F_s, |c_k - c~_k| <= D0_k + s D1_k (LPs
   maximizing +-c_k over F_s, exact dual certificates; valid for every s by weak duality);
3. hence s(c) <= alpha + beta s(c): alpha = max_i (sigma(c~, z_i) + B_i(D0) + eta) / w_i,
   beta = max_i B_i(D1) / w_i, B_i(D) = u (1 + gamma_d) sum_{j<d} |z_i|^j
   sum_{k>=j} D_k zeta^(k-j) (from |r_j - r~_j| <= sum_{k>=j} |c_k - c~_k| |z|^(k-j));
4. if beta < 1 and alpha / (1 - beta) < s_lb, a successful c would satisfy
   s_lb <= s(c) <= alpha / (1 - beta) < s_lb: no float32 coefficient vector (indeed no real
   one) of degree d works, and neither does any lower degree (Horner over leading zero
   coefficients is the lower degree's program: fma(0, z, c) = c).

s is measured in units of w, so s_lb says how many Horner error bounds the best polynomial
misses by (alpha is ~1, beta ~1e-4..0.3 in practice). The real-arithmetic proof is step 1
on the "exact" rows: exact_s_lb > 0 means no polynomial of that degree in u^2 (resp. in u),
evaluated exactly and rounded once, meets the criterion on the window; it depends on neither
the evaluation variable nor the program.

Certificates: HiGHS (dual simplex, interior point with crossover as a fallback) finds the
optimum on float64 data scaled per row; its dual support (d + 2 rows for step 1, d + 1 for
each bound in step 2, completed from the smallest slacks at a degenerate vertex) is then
solved again in exact rational arithmetic (``fractions``) on the exact row data (the float32 z
the program computes, the exact interval ends and m), and the multipliers are checked to be
nonnegative: sum sign_i mu_i (1, z_i, .., z_i^d) = 0 (resp. = +-e_k) exactly, so the bound
follows by weak duality whatever the LP's rounding was. ``Infeasibility.certificate`` /
``exact_certificate`` list the inputs, sides and multipliers: d + 2 inputs whose intervals no
polynomial of degree d threads (tests/test_mindegree.py re-checks one from scratch).

What is proven and what is assumed: the certificates are exact; alpha and beta are float64
sums over the rows with a relative safety factor 1 + 1e-9 (their rounding error is ~1e-15);
the reference CR(x) is the project's (float64 + mpmath); z_i come from the tested float32
FMA emulation (``replay.fma32``). The float32 proof is for the stated program and scale
s = fl(2/L^2) (resp. fl(2/L)) with L = L_c; the exact proof holds for every program.

Upper bound: a verified polynomial (``find_feasible``)
-------------------------------------------------------
The LP maximizing the slack on the tight rows (in units of the Horner bound of a reference
fit plus the coefficient rounding), the coefficients rounded to float32 one at a time from
the highest order down with the LP re-solved for the remaining ones after each, then a seeded
random search over float32 neighbours (up to 2 ulps per coefficient) if some window inputs
still fail, and a few rounds that tighten the failing inputs' rows by the observed excess.
The result counts only if the exhaustive float32 replay of every finite input meets the
criterion on every non-excluded input (``check``); ``polyspec.replay`` of the PolySpec gives
the same bits.

Between the two: a degree whose real-arithmetic LP is feasible (s* < 0) but within the
float32 error bound cannot be proven infeasible by this argument, and the search may not find
float32 coefficients for it; ``MinDegreeResult.lower_bound < degree`` then reports the gap
instead of a proven minimum. Such gaps come from inputs whose acceptable interval is a few
float32 ulps wide (the tail's edge); the default N = 4 excludes them and closes every gap of
the GELU table.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np
from numpy.polynomial import chebyshev as npcheb
from scipy.optimize import linprog

from . import polyspec, replay, report, rounding, targets

F32 = np.float32
F64 = np.float64
U32 = 2.0**-24  # float32 unit roundoff
FAMILIES = {"even": ("y", 2), "full": ("u", 1)}
CRITERIA = {"faithful": 1, "correct": 0}
CLASSES = ("tail", "tie", "near_tie")
NEAR_TIE_ULPS = 4.0
WIDE = 1e3
LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
SAFETY = 1.0 + 1e-9


# ---------------------------------------------------------------- acceptable outputs


def _step32(v, up: bool) -> np.ndarray:
    """The float32 neighbour above (below) float32 values v, as float64."""
    v = np.asarray(v, F64).astype(F32)
    return np.nextafter(v, F32(np.inf) if up else F32(-np.inf)).astype(F64)


def rounding_interval(cr, fmt: str, k: int):
    """The inputs' acceptable outputs: fmt values within k steps of ``cr``.

    Returns ``(mlo, mhi, lo, hi)``: the real interval ends (rounding boundaries of fmt, the
    midpoints between the last acceptable value and the first unacceptable one) and the
    float32 interval [lo, hi]: a float32 value o rounds (to nearest even) into the acceptable
    set iff lo <= o <= hi. A boundary m is a float32 number; a tie there goes to the even
    neighbour, so lo = m when the acceptable end value is even and the next float32 above m
    otherwise (hi likewise). Beyond the largest finite value the boundary is max + ulp/2 (a
    tie there rounds to infinity, which is even); an acceptable infinity makes the end
    infinite.
    """
    o = rounding.to_ordered(cr, fmt)
    top = rounding.max_ordered(fmt)
    top_mid = rounding.overflow_threshold(fmt)
    out = []
    for sign in (-1, 1):
        j_in = o + sign * k
        j_out = j_in + sign
        a, b = rounding.from_ordered(j_in, fmt), rounding.from_ordered(j_out, fmt)
        with np.errstate(invalid="ignore"):
            mid = np.where(np.abs(j_out) > top, np.copysign(top_mid, b), 0.5 * (a + b))
        mid = np.where(np.abs(j_in) > top, sign * np.inf, mid)
        even = j_in % 2 == 0
        f32 = np.where(even | np.isinf(mid), mid, _step32(mid, up=sign < 0))
        out.append((mid, f32))
    (mlo, lo), (mhi, hi) = out
    return mlo, mhi, lo, hi


# ---------------------------------------------------------------- targets and reference


def _target(target) -> targets.Target:
    t = targets.get(target) if isinstance(target, str) else target
    if not isinstance(t, targets.Target):
        raise TypeError(f"target must be a name of targets.TARGETS or a Target, got {target!r}")
    if t.reduction != "x/2 + even" or t.asymptote_kind != "relu":
        raise ValueError(f"{t.name}: only 'x/2 + even' targets with a ReLU asymptote")
    return t


def _reference(t: targets.Target, fmt: str):
    """(inputs float32, correctly rounded, float64 exact) over every finite fmt input."""
    if t.name in rounding.FUNCTIONS and targets.TARGETS.get(t.name) is t:
        return report.reference_table(t.name, fmt)
    x32 = report.all_finite(fmt)
    x64 = x32.astype(F64)
    cr = rounding.correctly_rounded(x64, fmt, (t.f, t.f_mp))
    with np.errstate(all="ignore"):
        ex = np.asarray(t.f(x64), F64)
    return x32, cr, ex


def _is_tie(f_mp, x: float, mid: float) -> bool:
    """Whether f(x) equals the midpoint ``mid`` to 400 digits (mpmath, as rounding does)."""
    for dps in rounding.MP_DIGITS:
        with mpmath.workdps(dps + 10):
            d = mpmath.mpf(f_mp(x, dps)) - mpmath.mpf(mid)
            if abs(d) > abs(mpmath.mpf(mid)) * mpmath.mpf(10) ** (8 - dps):
                return False
    return True


def exclusion_classes(x, cr, exact, fmt: str, criterion: str, f_mp, near_tie_ulps=NEAR_TIE_ULPS):
    """Boolean masks of the excluded inputs, per class (disjoint, in this priority):

    * ``tail``: x < 0 and ulp32(x/2) > ulp_fmt(CR(x)).
    * ``tie``: f(x) exactly on an end of the acceptable interval (a rounding boundary).
    * ``near_tie``: not a tie, and the float64 reference value lies within
      ``near_tie_ulps`` * ulp32(x/2) of an end of the acceptable interval.
    """
    x = np.asarray(x, F64)
    tail = (x < 0) & (rounding.ulp_of(0.5 * x, "float32") > rounding.ulp_of(cr, fmt))
    mlo, mhi, _, _ = rounding_interval(cr, fmt, CRITERIA[criterion])
    with np.errstate(invalid="ignore"):
        dist = np.minimum(np.abs(exact - mlo), np.abs(mhi - exact))
        scale = np.maximum(np.abs(mlo), np.abs(mhi))
    tie = np.zeros_like(tail)
    for i in np.flatnonzero(~tail & (dist <= 1e-12 * scale)):
        mid = float(mlo[i]) if abs(exact[i] - mlo[i]) <= abs(mhi[i] - exact[i]) else float(mhi[i])
        tie[i] = _is_tie(f_mp, float(x[i]), mid)
    near = ~tail & ~tie & (dist < near_tie_ulps * rounding.ulp_of(0.5 * x, "float32"))
    return {"tail": tail, "tie": tie, "near_tie": near}


# ---------------------------------------------------------------- the problem


@dataclass
class Problem:
    """Every input of one (target, format, criterion): reference, classes, intervals, clamp."""

    target: targets.Target
    fmt: str
    criterion: str
    near_tie_ulps: float
    max_abs: float | None
    x32: np.ndarray
    x: np.ndarray
    cr: np.ndarray
    exact: np.ndarray
    classes: dict
    excluded: np.ndarray
    mlo: np.ndarray
    mhi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    asym_ok: np.ndarray
    clamp: float
    window: np.ndarray
    seconds: float

    @property
    def k(self) -> int:
        return CRITERIA[self.criterion]


def _problem(target, fmt: str, criterion: str, near_tie_ulps: float, max_abs) -> Problem:
    t0 = time.perf_counter()
    t = _target(target)
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {tuple(CRITERIA)}, got {criterion!r}")
    x32, cr, ex = _reference(t, fmt)
    if max_abs is not None:
        sel = np.abs(x32) <= max_abs
        x32, cr, ex = x32[sel], cr[sel], ex[sel]
    x = x32.astype(F64)
    classes = exclusion_classes(x, cr, ex, fmt, criterion, t.f_mp, near_tie_ulps)
    in_class = np.zeros(x.shape, bool)
    for m in classes.values():
        in_class |= m
    k = CRITERIA[criterion]
    mlo, mhi, lo, hi = rounding_interval(cr, fmt, k)
    asym = report.round_output(t.asymptote(x).astype(F32), fmt)
    asym_ok = rounding.ulp_distance(asym, cr, fmt) <= k
    need = ~in_class & ~asym_ok
    clamp = float(np.abs(x[need]).max()) if need.any() else 0.0
    # class members beyond the clamp whose asymptote is acceptable are served: not excluded
    excluded = in_class & ~(asym_ok & (np.abs(x) > clamp))
    window = ~excluded & (np.abs(x) <= clamp)
    return Problem(
        t,
        fmt,
        criterion,
        float(near_tie_ulps),
        max_abs,
        x32,
        x,
        cr,
        ex,
        classes,
        excluded,
        mlo,
        mhi,
        lo,
        hi,
        asym_ok,
        clamp,
        window,
        time.perf_counter() - t0,
    )


@functools.cache
def _problem_cached(target: str, fmt: str, criterion: str, near_tie_ulps: float, max_abs):
    return _problem(target, fmt, criterion, near_tie_ulps, max_abs)


def problem(
    target="gelu", fmt="bfloat16", criterion="faithful", near_tie_ulps=NEAR_TIE_ULPS, max_abs=None
) -> Problem:
    """The (cached, for named targets) inputs, classes, intervals and clamp of one case."""
    if isinstance(target, str):
        return _problem_cached(target, fmt, criterion, float(near_tie_ulps), max_abs)
    return _problem(target, fmt, criterion, float(near_tie_ulps), max_abs)


# ---------------------------------------------------------------- rows


def _scale(family: str, fit_interval: float) -> float:
    var, _ = FAMILIES[family]
    end = fit_interval if var == "u" else fit_interval**2
    return float(rounding.round_to_format(2.0 / end, "float32"))


def _program_parts(x32: np.ndarray, family: str, scale: float):
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
    s = _scale(family, fit_interval)
    if kind == "exact":
        u = np.abs(x)
        v = u * u if family == "even" else u
        z = v * s - 1.0
        m = v
        L, H = prob.mlo[idx], prob.mhi[idx]
    else:
        z, m = _program_parts(x32, family, s)
        if kind == "float32":
            L = 0.5 * (_step32(prob.lo[idx], up=False) + prob.lo[idx])
            H = 0.5 * (_step32(prob.hi[idx], up=True) + prob.hi[idx])
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
    s = Fraction(_scale(family, fit_interval))
    x = Fraction(float(prob.x[i]))
    if kind == "exact":
        u = abs(x)
        v = u * u if family == "even" else u
        z, m = v * s - 1, v
        bound = Fraction(float(prob.mhi[i] if upper else prob.mlo[i]))
    else:
        zf, mf = _program_parts(prob.x32[i : i + 1], family, float(s))
        z, m = Fraction(float(zf[0])), Fraction(float(mf[0]))
        if kind == "float32":
            e = float(prob.hi[i] if upper else prob.lo[i])
            nb = float(_step32(np.array([e]), up=upper)[0])
            bound = (Fraction(e) + Fraction(nb)) / 2
        else:
            bound = Fraction(float(prob.hi[i] if upper else prob.lo[i]))
    return z, (bound - x / 2) / m


# ---------------------------------------------------------------- LPs


def _cheb(z, n):
    return npcheb.chebvander(np.asarray(z, F64), n - 1)


@functools.cache
def _cheb2mono(n: int) -> np.ndarray:
    """M with monomial coefficients c = M a for Chebyshev coefficients a."""
    M = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        c = npcheb.cheb2poly(e)
        M[: c.size, j] = c
    return M


def _linprog(c, A, b, A_eq=None, b_eq=None):
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


def _scaled_rows(r: Rows, n: int, w_up, w_lo, a_ref):
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


def _min_widening(r: Rows, n: int, w_up, w_lo, a_ref=None, fixed=None):
    """min s subject to pl - s w <= P(z) <= ph + s w (and monomial coefficients c_j fixed at
    the values of the dict ``fixed``); returns (s, chebyshev a, res)."""
    A, b, a_ref, eps = _scaled_rows(r, n, w_up, w_lo, a_ref)
    A = np.hstack([A, -np.ones((A.shape[0], 1))])
    obj = np.zeros(n + 1)
    obj[-1] = 1.0
    if fixed:
        M = _cheb2mono(n)
        ks = sorted(fixed)
        A_eq = np.hstack([eps * M[ks], np.zeros((len(ks), 1))])
        b_eq = np.array([fixed[k] - M[k] @ a_ref for k in ks])
        res = _linprog(obj, A, b, A_eq, b_eq)
    else:
        res = _linprog(obj, A, b)
    if res.status != 0:
        return math.nan, None, res
    return float(res.x[-1]), a_ref + eps * res.x[:n], res


# ---------------------------------------------------------------- exact linear algebra


def _solve_exact(A: list[list[Fraction]], b: list[Fraction], guess: list[float]):
    """A solution of A w = b in rationals: Gaussian elimination, free unknowns fixed at the
    (rationalized) guess; None when inconsistent."""
    m, n = len(A), len(A[0])
    M = [row[:] + [bi] for row, bi in zip(A, b, strict=True)]
    piv_cols = []
    r = 0
    for col in range(n):
        p = next((i for i in range(r, m) if M[i][col] != 0), None)
        if p is None:
            continue
        M[r], M[p] = M[p], M[r]
        inv = 1 / M[r][col]
        M[r] = [v * inv for v in M[r]]
        for i in range(m):
            if i != r and M[i][col] != 0:
                f = M[i][col]
                M[i] = [a - f * c for a, c in zip(M[i], M[r], strict=True)]
        piv_cols.append(col)
        r += 1
        if r == m:
            break
    for i in range(r, m):
        if M[i][n] != 0 and all(M[i][j] == 0 for j in range(n)):
            return None
    w = [None] * n
    free = [j for j in range(n) if j not in piv_cols]
    for j in free:
        w[j] = Fraction(max(guess[j], 0.0))
    for i, col in enumerate(piv_cols):
        w[col] = M[i][n] - sum(M[i][j] * w[j] for j in free)
    # check
    for row, bi in zip(A, b, strict=True):
        if sum(a * wj for a, wj in zip(row, w, strict=True)) != bi:
            return None
    return w


def _candidate_supports(res, need: int, tries: int = 30):
    """Row sets to solve the dual certificate on: the LP's dual support (multipliers above
    1e-12 of the largest), completed to ``need`` rows with the rows of smallest slack when it
    is smaller (a degenerate vertex), in a few alternative ways."""
    y = -np.asarray(res.ineqlin.marginals, F64)
    slack = np.asarray(res.ineqlin.residual, F64)
    top = float(y.max()) if y.size else 0.0
    sup = [int(j) for j in np.argsort(-y) if y[j] > 1e-12 * top]
    if len(sup) >= need:
        yield sup, y
        return
    extras = [int(j) for j in np.argsort(slack) if int(j) not in set(sup)][:8]
    for q, combo in enumerate(itertools.combinations(extras, need - len(sup))):
        if q >= tries:
            return
        yield sup + list(combo), y


@dataclass
class Certificate:
    """An exact dual certificate: nonnegative multipliers on rows (input x, side)."""

    rows: list  # (input index, "upper"/"lower", exact multiplier mu[, the row's weight w])
    value: Fraction  # the certified bound
    slope: Fraction = Fraction(0)  # for coefficient bounds: base + s * slope
    ok: bool = True
    note: str = ""


def _row_list(r: Rows, sel):
    nu = r.z_up.size
    out = []
    for j in sel:
        if j < nu:
            out.append((int(r.i_up[j]), True, j))
        else:
            out.append((int(r.i_lo[j - nu]), False, j))
    return out


def _exact_rows(prob, family, fit_interval, r: Rows, rl, n, w_all):
    cols, bounds, ws = [], [], []
    for i, up, j in rl:
        z, bnd = exact_row(prob, family, fit_interval, r.kind, i, up)
        sgn = 1 if up else -1
        cols.append([sgn * z**k for k in range(n)])
        bounds.append(bnd)
        ws.append(Fraction(float(w_all[j])))
    return cols, bounds, ws


def certify_widening(prob, family, fit_interval, r: Rows, n, res, w_up, w_lo) -> Certificate:
    """Exact lower bound s_lb on the widening: every c with pl - s w <= P(z) <= ph + s w on the
    rows has s >= s_lb (weights w taken as the exact rationals of their float64 values).

    Multipliers lam >= 0 on the rows with sum_i sign_i lam_i V(z_i) / w_i = 0 (V the monomials
    1, z, .., z^d, exact) and sum lam_i = 1 give s >= sum_lower mu pl - sum_upper mu ph,
    mu = lam / w; they are solved in rationals on the LP's dual support."""
    w_all = np.concatenate([w_up, w_lo])
    for sel, y in _candidate_supports(res, n + 1):
        rl = _row_list(r, sel)
        cols, bounds, ws = _exact_rows(prob, family, fit_interval, r, rl, n, w_all)
        A = [[cols[q][k] / ws[q] for q in range(len(rl))] for k in range(n)]
        A.append([Fraction(1)] * len(rl))
        b = [Fraction(0)] * n + [Fraction(1)]
        lam = _solve_exact(A, b, [float(y[j]) for _, _, j in rl])
        if lam is None or any(v < 0 for v in lam):
            continue
        val = Fraction(0)
        for q, (_, up, _) in enumerate(rl):
            mu = lam[q] / ws[q]
            val += -mu * bounds[q] if up else mu * bounds[q]
        rows_ = [
            (i, "upper" if up else "lower", lam[q] / ws[q], ws[q])
            for q, (i, up, j) in enumerate(rl)
        ]
        return Certificate(rows_, val)
    return Certificate([], Fraction(0), ok=False, note="no exact nonnegative multipliers found")


def _bound_lp(r: Rows, n: int, s: float, w_up, w_lo, k: int, sign: int, a_ref):
    """max sign * c_k (monomial) subject to pl - s w <= P(z) <= ph + s w."""
    A, b, a_ref, eps = _scaled_rows(r, n, w_up, w_lo, a_ref)
    return _linprog(-sign * _cheb2mono(n)[k], A, b + s)


def certify_coefficient(prob, family, fit_interval, r: Rows, n, res, w_up, w_lo, k, sign):
    """Exact bound sign * c_k <= base + s * slope for every c in F_s (every s): multipliers
    mu >= 0 with sum_i sign_i mu_i V(z_i) = sign e_k give sign c_k <= sum_upper mu (ph + s w)
    - sum_lower mu (pl - s w) (weak duality; monomial coefficients c)."""
    if res.status != 0:
        return Certificate([], Fraction(0), ok=False, note=f"LP status {res.status}")
    w_all = np.concatenate([w_up, w_lo])
    for sel, y in _candidate_supports(res, n):
        rl = _row_list(r, sel)
        cols, bounds, ws = _exact_rows(prob, family, fit_interval, r, rl, n, w_all)
        A = [[cols[q][kk] for q in range(len(rl))] for kk in range(n)]
        b = [Fraction(sign if kk == k else 0) for kk in range(n)]
        mu = _solve_exact(A, b, [float(y[j]) / float(w_all[j]) for _, _, j in rl])
        if mu is None or any(v < 0 for v in mu):
            continue
        base = sum((mu[q] * bounds[q] if rl[q][1] else -mu[q] * bounds[q]) for q in range(len(rl)))
        slope = sum(mu[q] * ws[q] for q in range(len(rl)))
        rows_ = [(i, "upper" if up else "lower", mu[q]) for q, (i, up, j) in enumerate(rl)]
        return Certificate(rows_, Fraction(base), slope)
    return Certificate([], Fraction(0), ok=False, note="no exact nonnegative multipliers found")


def _round_up(q: Fraction) -> float:
    """The smallest float64 >= q."""
    f = float(q)
    return float(np.nextafter(f, np.inf)) if Fraction(f) < q else f


def _inflate(v: float) -> float:
    """v pushed up by a relative SAFETY margin (for float64 sums of ~1e-15 relative error)."""
    return v + abs(v) * (SAFETY - 1.0) + 1e-300


def _gamma(d: int) -> float:
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
    """Bound on |P_hat(z) - P(z)| for float32 Horner with FMA (module docstring), for every
    coefficient vector within D_k of c (D = None: c itself), without the underflow term."""
    d = len(c) - 1
    if d == 0:
        return np.zeros(np.size(z))
    g = _gamma(d)
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


@dataclass
class Infeasibility:
    """The evidence that degree ``degree`` is infeasible (see the module docstring)."""

    degree: int
    rows: int
    s_star: float  # min widening (float32 rows, units of w) found by the LP
    s_lb: float  # its exact certified lower bound (float of the rational)
    certificate_ok: bool
    alpha: float = math.nan
    beta: float = math.nan
    proven: bool = False  # float32 program: no coefficients work
    exact_s_lb: float = math.nan  # real arithmetic rows: certified min widening
    exact_proven: bool = False  # real arithmetic: infeasible
    certificate: list = field(default_factory=list)  # (x, side, mu, w): the s_lb certificate
    exact_certificate: list = field(default_factory=list)  # the same for real arithmetic
    note: str = ""
    seconds: float = 0.0


def _weights(r: Rows, cref, floor_rel=1e-6):
    d = len(cref) - 1
    if d == 0:
        return np.ones(r.z_up.size), np.ones(r.z_lo.size)
    wu = horner_bound(cref, r.z_up)
    wl = horner_bound(cref, r.z_lo)
    fl = floor_rel * max(wu.max(initial=0), wl.max(initial=0)) + 1e-30
    return np.maximum(wu, fl), np.maximum(wl, fl)


def _first_weights(r: Rows, n):
    mag = lambda a, b: U32 * n * np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-3)  # noqa: E731
    return mag(r.ph, r.ph), mag(r.pl, r.pl)


def prove_infeasible(prob: Problem, family: str, fit_interval: float, degree: int) -> Infeasibility:
    """Try to prove that no P of ``degree`` works (float32 program and real arithmetic)."""
    t0 = time.perf_counter()
    n = degree + 1
    r = rows(prob, family, fit_interval, "float32")
    if r.impossible.size:
        return Infeasibility(
            degree,
            r.n,
            math.inf,
            math.inf,
            True,
            0.0,
            0.0,
            True,
            certificate=[(float(prob.x[i]), "m = 0", None, None) for i in r.impossible[:5]],
            note="inputs no polynomial serves",
            seconds=time.perf_counter() - t0,
        )
    wu, wl = _first_weights(r, n)
    s0, a0, res0 = _min_widening(r, n, wu, wl)
    if a0 is None:
        return Infeasibility(
            degree, r.n, math.nan, math.nan, False, note=f"LP status {res0.status}"
        )
    cref = _cheb2mono(n) @ a0
    wu, wl = _weights(r, cref)
    s_star, a, res = _min_widening(r, n, wu, wl, a0)
    cert = certify_widening(prob, family, fit_interval, r, n, res, wu, wl)
    ev = Infeasibility(
        degree,
        r.n,
        s_star,
        float(cert.value),
        cert.ok,
        certificate=[(float(prob.x[i]), side, mu, w) for i, side, mu, w in cert.rows],
        note=cert.note,
    )
    # real arithmetic
    re = rows(prob, family, fit_interval, "exact")
    eu, el = _weights(re, cref)
    se, ae, rese = _min_widening(re, n, eu, el, a0)
    if ae is not None:
        ce = certify_widening(prob, family, fit_interval, re, n, rese, eu, el)
        if ce.ok:
            ev.exact_certificate = [(float(prob.x[i]), side, mu) for i, side, mu, _ in ce.rows]
            ev.exact_s_lb = float(ce.value)
            ev.exact_proven = ce.value > 0
    if not (cert.ok and cert.value > 0):
        ev.seconds = time.perf_counter() - t0
        return ev
    cref = _cheb2mono(n) @ a
    if degree == 0:  # no rounding in P: alpha = beta = 0
        ev.alpha, ev.beta, ev.proven = 0.0, 0.0, True
        ev.seconds = time.perf_counter() - t0
        return ev
    s2 = 1.5 * s_star
    D0 = np.zeros(n)
    D1 = np.zeros(n)
    for k in range(n):
        parts = []
        for sign in (1, -1):
            res_k = _bound_lp(r, n, s2, wu, wl, k, sign, a)
            ck = certify_coefficient(prob, family, fit_interval, r, n, res_k, wu, wl, k, sign)
            if not ck.ok:
                ev.note = f"coefficient bound c_{k} ({'+' if sign > 0 else '-'}): {ck.note}"
                ev.seconds = time.perf_counter() - t0
                return ev
            parts.append(ck)
        ref = Fraction(float(cref[k]))
        D0[k] = _round_up(max(parts[0].value - ref, parts[1].value + ref))
        D1[k] = _round_up(max(parts[0].slope, parts[1].slope))
    zu, zl = r.z_up, r.z_lo
    zeta = max(1.0, float(np.max(np.abs(np.concatenate([zu, zl])))))
    eta = degree * zeta**degree * 2.0**-149
    base_u = horner_bound(cref, zu, D0, zeta) + eta
    base_l = horner_bound(cref, zl, D0, zeta) + eta
    g = _gamma(degree)
    pw = lambda z: np.abs(z)[None, :] ** np.arange(degree)[:, None]  # noqa: E731
    tail1 = np.array([sum(D1[kk] * zeta ** (kk - j) for kk in range(j, n)) for j in range(degree)])
    slope_u = U32 * (1 + g) * np.sum(pw(zu) * tail1[:, None], axis=0)
    slope_l = U32 * (1 + g) * np.sum(pw(zl) * tail1[:, None], axis=0)
    alpha = _inflate(float(max(np.max(base_u / wu), np.max(base_l / wl))))
    beta = _inflate(float(max(np.max(slope_u / wu), np.max(slope_l / wl))))
    ev.alpha, ev.beta = alpha, beta
    ev.proven = beta < 1 and Fraction(alpha) / (1 - Fraction(beta)) < cert.value
    ev.seconds = time.perf_counter() - t0
    return ev


# ---------------------------------------------------------------- the float32 program


def family_program(coeffs, family: str, scale: float, clamp: float) -> replay.Program:
    """The family's float32 program (module docstring) as ``replay`` runs it: u = |x|,
    y = fl(u*u), z = fma(v, scale, -1), P(z) by Horner with FMA, out = fma(m, P, fl(x/2)) for
    |x| <= clamp, ReLU (x or -0.0) beyond; v = m = y (even family) or u (full family). The
    "generic" order of the matching PolySpec."""
    var, factor = FAMILIES[family]
    return replay.Program(
        coefficients=tuple(coeffs),
        reduction="x/2 + even",
        parity="even",
        variable=var,
        factor=factor,
        scale=scale,
        clamp=clamp,
        asymptote=targets.ASYMPTOTES["relu"],
    )


def replay32(x32, coeffs, family: str, scale: float, clamp: float) -> np.ndarray:
    """The program in float32 at the inputs ``x32``. Equals polyspec.replay of the matching
    PolySpec bit for bit (tests/test_mindegree.py)."""
    prog = family_program(coeffs, family, scale, clamp)
    return replay.run(prog, np.asarray(x32, F32)).astype(F32)


def check(prob: Problem, out32) -> dict:
    """ulp errors of float32 outputs (rounded to the format) against the correctly rounded
    values: max over the non-excluded inputs, failures, and how many excluded inputs happen to
    be within the criterion anyway."""
    got = report.round_output(np.asarray(out32, F32), prob.fmt)
    bad = np.isnan(got)
    d = np.full(got.shape, np.iinfo(np.int64).max)
    d[~bad] = rounding.ulp_distance(got[~bad], prob.cr[~bad], prob.fmt)
    inc = ~prob.excluded
    fail = inc & (d > prob.k)
    return {
        "max_ulp": int(d[inc].max()) if inc.any() else 0,
        "checked": int(inc.sum()),
        "failures": int(fail.sum()),
        "fail_idx": np.flatnonzero(fail),
        "excluded_within": int((prob.excluded & (d <= prob.k)).sum()),
        "excluded_max_ulp": int(d[prob.excluded].max()) if prob.excluded.any() else 0,
    }


@dataclass
class Feasible:
    """Verified float32 coefficients (``find_feasible``)."""

    coefficients: tuple  # float32 values as floats, c_0 first
    margin: float  # the LP's slack before rounding (units of the row weights)
    search_candidates: int  # coefficient vectors the random search evaluated
    check: dict  # ``check`` of the exhaustive replay
    seconds: float


def _window_data(prob: Problem, family: str, scale: float):
    idx = np.flatnonzero(prob.window)
    z, m = _program_parts(prob.x32[idx], family, scale)
    return {
        "idx": idx,
        "z": z.astype(F32),
        "m": m.astype(F32),
        "h": (prob.x32[idx] * F32(0.5)).astype(F32),
        "lo": prob.lo[idx],
        "hi": prob.hi[idx],
    }


def _violations(W: dict, sel, C) -> np.ndarray:
    """Normalized violations (o - hi or lo - o, over hi - lo; <= 0 inside) of the window
    inputs ``sel`` for each column of float32 coefficients C (n, k): shape (len(sel), k)."""
    z = W["z"][sel][:, None]
    C = np.asarray(C, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        p = replay.poly32(z, [row[None, :] for row in C])
        o = replay.fma32(W["m"][sel][:, None], p, W["h"][sel][:, None]).astype(F64)
        lo, hi = W["lo"][sel][:, None], W["hi"][sel][:, None]
        width = np.maximum(hi - lo, 1e-300)
        v = np.maximum(o - hi, lo - o) / width
    return np.where(np.isnan(v), np.inf, v)


def _score(v: np.ndarray):
    """(failures, total violation, worst) per column."""
    return (v > 0).sum(axis=0), np.clip(v, 0, None).sum(axis=0), v.max(axis=0)


def _ulp_steps(c: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """float32 values ``steps`` (integer array, same leading shape) ulps away from c."""
    o = rounding.to_ordered(np.asarray(c, F32), "float32")
    return rounding.from_ordered(o[:, None] + steps, "float32").astype(F32)


def _search(
    W: dict,
    c32: np.ndarray,
    seed: int = 0,
    batches: int = 40,
    batch: int = 256,
    radius: int = 2,
    active: int = 3000,
):
    """Search over float32 neighbours of the coefficients for a vector that meets every
    window input: batches of random offsets (up to ``radius`` ulps per coefficient) around
    the best vector so far, scored by (failures, total violation) on the window inputs
    closest to their interval ends; a candidate with no failure there is checked on the whole
    window. Deterministic (fixed seed). Returns (coefficients, candidates tried)."""
    rng = np.random.default_rng(seed)
    c = np.asarray(c32, F32).copy()
    n = c.size
    allsel = np.arange(W["z"].size)
    tried = 0
    v_all = _violations(W, allsel, c[:, None])[:, 0]
    if not (v_all > 0).any():
        return c, tried
    sel = np.argsort(-v_all)[: min(active, v_all.size)]
    f, tot, _ = _score(_violations(W, sel, c[:, None]))
    best = (int(f[0]), float(tot[0]))
    for _ in range(batches):
        steps = rng.integers(-radius, radius + 1, size=(n, batch))
        steps[:, 0] = 0
        C = _ulp_steps(c, steps)
        tried += batch
        f, tot, _ = _score(_violations(W, sel, C))
        order = np.lexsort((tot, f))
        for j in order[:8]:
            if f[j] > 0:
                break
            v = _violations(W, allsel, C[:, j : j + 1])[:, 0]
            if not (v > 0).any():
                return C[:, j].copy(), tried
            new = np.setdiff1d(np.flatnonzero(v > 0), sel)
            sel = np.concatenate([sel, new])
        j = order[0]
        if (int(f[j]), float(tot[j])) < best:
            c, best = C[:, j].copy(), (int(f[j]), float(tot[j]))
    return c, tried


def find_feasible(
    prob: Problem, family: str, fit_interval: float, degree: int, rounds: int = 6, seed: int = 0
):
    """Float32 coefficients whose replay meets the criterion on every non-excluded input, or
    None.

    Each round: the max-slack LP over the tight rows (slack in units of the Horner error bound
    of a reference fit plus the coefficient rounding, ``_weights``), the coefficients rounded
    one at a time from the highest order down with the LP re-solved for the lower ones after
    each, then a seeded random search over float32 neighbours (``_search``) if some window
    inputs still fail. Inputs that still fail get their rows tightened by the observed excess
    (plus a tenth of the row's weight) for the next round. Success is decided by the
    exhaustive replay (``check``) only.
    """
    t0 = time.perf_counter()
    n = degree + 1
    r = rows(prob, family, fit_interval, "tight")
    if r.impossible.size:
        return None
    s = _scale(family, fit_interval)
    M = _cheb2mono(n)
    wu, wl = _first_weights(r, n)
    _, a0, _ = _min_widening(r, n, wu, wl)
    if a0 is None:
        return None
    cref = M @ a0
    rnd = lambda z: U32 * np.polynomial.polynomial.polyval(np.abs(z), np.abs(cref))  # noqa: E731
    hu, hl = _weights(r, cref)
    wu, wl = hu + rnd(r.z_up), hl + rnd(r.z_lo)
    W = _window_data(prob, family, s)
    extra_u = np.zeros(r.z_up.size)
    extra_l = np.zeros(r.z_lo.size)
    margin = math.nan
    tried = 0
    for rnd_i in range(rounds):
        rr = Rows(
            "tight", r.z_up, r.ph - extra_u, r.i_up, r.z_lo, r.pl + extra_l, r.i_lo, r.impossible
        )
        s_star, a, _ = _min_widening(rr, n, wu, wl, a0)
        if a is None:
            break
        if rnd_i == 0:
            margin = -s_star
        fixed = {}
        for k in range(degree, -1, -1):
            _, ak, _ = _min_widening(rr, n, wu, wl, a, fixed)
            if ak is None:
                break
            a = ak
            fixed[k] = float(rounding.round_to_format(M[k] @ a, "float32"))
        c32 = rounding.round_to_format(
            np.array([fixed.get(k, M[k] @ a) for k in range(n)]), "float32"
        )
        c32, t = _search(W, c32, seed=seed + rnd_i)
        tried += t
        out = replay32(prob.x32, c32, family, s, prob.clamp)
        ck = check(prob, out)
        if ck["failures"] == 0:
            return Feasible(
                tuple(float(v) for v in c32), margin, tried, ck, time.perf_counter() - t0
            )
        fi = ck["fail_idx"]
        z, m = _program_parts(prob.x32[fi], family, s)
        o = out[fi].astype(F64)
        for zi, mi, oi, hi_, lo_ in zip(z, m, o, prob.hi[fi], prob.lo[fi], strict=True):
            if mi == 0 or not np.isfinite(oi):
                continue
            if oi > hi_:
                g = np.searchsorted(r.z_up, zi)
                if g < r.z_up.size and r.z_up[g] == zi:
                    extra_u[g] += (oi - hi_) / mi + 0.1 * wu[g]
            else:
                g = np.searchsorted(r.z_lo, zi)
                if g < r.z_lo.size and r.z_lo[g] == zi:
                    extra_l[g] += (lo_ - oi) / mi + 0.1 * wl[g]
    return None


# ---------------------------------------------------------------- exclusions in detail


def _f32_count(a: Fraction, b: Fraction) -> int:
    """How many float32 values lie in [a, b] (0 < a; exact)."""
    if b < a:
        return 0

    def ceil32(q: Fraction) -> np.float32:
        f = F32(float(q))
        while Fraction(float(f)) < q:
            f = np.nextafter(f, F32(np.inf))
        while Fraction(float(np.nextafter(f, F32(-np.inf)))) >= q:
            f = np.nextafter(f, F32(-np.inf))
        return f

    def floor32(q: Fraction) -> np.float32:
        f = F32(float(q))
        while Fraction(float(f)) > q:
            f = np.nextafter(f, F32(-np.inf))
        while Fraction(float(np.nextafter(f, F32(np.inf)))) <= q:
            f = np.nextafter(f, F32(np.inf))
        return f

    lo, hi = ceil32(a), floor32(b)
    return max(0, int(hi.view(np.int32)) - int(lo.view(np.int32)) + 1)


def tail_reachability(prob: Problem) -> dict:
    """For the excluded tail inputs: how many float32 values q make fl(x/2 + q) acceptable
    (the unfused x/2 + p with p a float32 number: q near |x|/2, the sum exact by Sterbenz).
    Returns counts of inputs with 0, 1, 2 and more admissible q."""
    sel = np.flatnonzero(prob.classes["tail"] & prob.excluded)
    counts = {"0": 0, "1": 0, "2": 0, ">2": 0}
    for i in sel:
        half = Fraction(-float(prob.x[i])) / 2  # |x|/2
        a = Fraction(float(prob.lo[i])) + half
        b = Fraction(float(prob.hi[i])) + half
        # only q in [|x|/4, |x|] can land near 0 (elsewhere |x/2 + q| >= |x|/4 > |lo|, |hi|)
        a, b = max(a, half / 2), min(b, 2 * half)
        c = _f32_count(a, b)
        counts[str(c) if c <= 2 else ">2"] += 1
    return counts


def class_counts(prob: Problem) -> dict:
    """Per class: inputs in it, of which served by the asymptote (beyond the clamp and
    acceptable there), and excluded (the rest); for the tail also the inputs whose
    asymptote is not acceptable (the clamp returns -0.0 but the correctly rounded value is a
    nonzero number more than the criterion's ulps from 0)."""
    out = {}
    for name, m in prob.classes.items():
        out[name] = {
            "in_class": int(m.sum()),
            "served_by_asymptote": int((m & ~prob.excluded).sum()),
            "excluded": int((m & prob.excluded).sum()),
        }
    t = prob.classes["tail"] & prob.excluded
    out["tail"]["asymptote_unacceptable"] = int((t & ~prob.asym_ok).sum())
    return out


# ---------------------------------------------------------------- the driver


@dataclass
class MinDegreeResult:
    """The minimum degree of one (target, format, family, criterion) case.

    ``degree``: the degree of P (in z) of the verified float32 polynomial (None: none found up
    to ``max_degree``); ``degree_in_u``: its degree as a polynomial in |x| (even: 2d + 2,
    full: d + 1); ``lower_bound``: the smallest degree not proven infeasible (every degree
    below it is proven infeasible for the float32 program); ``proven_minimum``: the two
    agree. ``lower``: the evidence for degree - 1 (or for the highest degree tried).
    ``coefficients`` / ``coefficients_hex``: c_0 .. c_d (float32); ``clamp`` (L_c),
    ``fit_interval`` (L) and ``scale`` (s) define the program; ``spec``: the same as a
    PolySpec (None for targets outside ``targets.TARGETS``). ``verification``: the exhaustive
    replay (``check``: max ulp and failures over the non-excluded inputs, how many excluded
    inputs are within the criterion anyway), the LP margin, the search's candidates, and
    whether ``polyspec.replay`` gives the same bits. ``tried``: per degree, the LP's s*, the
    certified s_lb, alpha, beta, the real-arithmetic s_lb, what was proven or found.
    ``classes``: ``class_counts``; ``tail_reachability``: see that function; ``timings``:
    seconds for the problem set-up, the proofs, the fits and in total.
    """

    target: str
    fmt: str
    family: str
    criterion: str
    form: str
    degree: int | None
    degree_in_u: int | None
    lower_bound: int
    proven_minimum: bool
    clamp: float
    fit_interval: float
    scale: float
    coefficients: tuple
    coefficients_hex: tuple
    verification: dict
    lower: Infeasibility | None
    tried: list
    classes: dict
    tail_reachability: dict
    near_tie_ulps: float
    timings: dict
    spec: object = None

    def summary(self) -> str:
        rng = (
            f"{self.degree}"
            if self.proven_minimum
            else f"{self.lower_bound}..{self.degree if self.degree is not None else '?'}"
        )
        return (
            f"{self.target} {self.fmt} {self.criterion} {self.family}: degree {rng} "
            f"(u-degree {self.degree_in_u}), clamp {self.clamp:g}"
        )


def _form(family: str) -> str:
    if family == "even":
        return "x/2 + y P(z), y = fl(u*u), z = fma(y, fl(2/L^2), -1)"
    return "x/2 + u Q(z), z = fma(u, fl(2/L), -1)"


def _u_degree(family: str, d: int) -> int:
    return 2 * d + 2 if family == "even" else d + 1


def min_degree(
    target="gelu",
    fmt="bfloat16",
    family="even",
    criterion="faithful",
    max_degree=12,
    *,
    near_tie_ulps=NEAR_TIE_ULPS,
    max_abs=None,
    fit_interval=None,
    start_degree=0,
    rounds=6,
) -> MinDegreeResult:
    """The smallest degree of P whose float32 program meets ``criterion`` on every
    non-excluded input, with the proof that the degree below is infeasible (module
    docstring). Degrees from ``start_degree`` up: each is first attacked by
    ``prove_infeasible``; if that fails, ``find_feasible`` looks for float32 coefficients.

    ``target``: a name of ``targets.TARGETS`` with reduction "x/2 + even" (gelu, gelu_tanh,
    silu) or such a ``targets.Target``; ``fmt``: "bfloat16" or "float16"; ``family``: "even"
    or "full"; ``criterion``: "faithful" (within 1 ulp of the correctly rounded value) or
    "correct"; ``near_tie_ulps``: N of the near-tie class; ``max_abs``: only the inputs with
    |x| <= max_abs (a target on a bounded domain, e.g. the tests' toy polynomial);
    ``fit_interval``: L of the evaluation variable (default: the clamp); ``rounds``: the
    search rounds of ``find_feasible``.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {tuple(FAMILIES)}, got {family!r}")
    t0 = time.perf_counter()
    prob = problem(target, fmt, criterion, near_tie_ulps, max_abs)
    L = prob.clamp if fit_interval is None else float(fit_interval)
    if not L > 0:
        raise ValueError("the asymptote serves every input: no polynomial needed")
    s = _scale(family, L)
    tried = []
    evidence = {}
    lower_bound = 0
    found = None
    proof_s = fit_s = 0.0
    for d in range(start_degree, max_degree + 1):
        ev = prove_infeasible(prob, family, L, d)
        evidence[d] = ev
        proof_s += ev.seconds
        entry = {
            "degree": d,
            "s_star": ev.s_star,
            "s_lb": ev.s_lb,
            "alpha": ev.alpha,
            "beta": ev.beta,
            "proven_infeasible": ev.proven,
            "exact_s_lb": ev.exact_s_lb,
            "exact_infeasible": ev.exact_proven,
            "found": False,
            "note": ev.note,
            "seconds": ev.seconds,
        }
        tried.append(entry)
        if ev.proven:  # a lower degree is this degree with zero leading coefficients
            lower_bound = d + 1
            continue
        t1 = time.perf_counter()
        f = find_feasible(prob, family, L, d, rounds=rounds)
        fit_s += time.perf_counter() - t1
        entry["seconds"] += time.perf_counter() - t1
        if f is not None:
            entry["found"] = True
            found = (d, f)
            break
    if found is not None:
        d, f = found
        lower = evidence.get(d - 1)
        coeffs = f.coefficients
        out = replay32(prob.x32, coeffs, family, s, prob.clamp)
        verification = {k: v for k, v in f.check.items() if k != "fail_idx"}
        verification["lp_margin"] = f.margin
        verification["search_candidates"] = f.search_candidates
        spec = None
        if targets.TARGETS.get(prob.target.name) is prob.target:
            var, factor = FAMILIES[family]
            spec = polyspec.PolySpec(
                target=prob.target.name,
                variable=var,
                factor=factor,
                shift=True,
                degree=d,
                fit_interval=L,
                clamp=prob.clamp,
                fmt="float32",
                coefficients=coeffs,
                method="mindegree (max-slack LP, sequential float32 rounding, search)",
                program="generic",
                meta={"criterion": criterion, "format": fmt, "near_tie_ulps": prob.near_tie_ulps},
            )
            ref = polyspec.replay(spec, prob.x32)
            verification["polyspec_replay_identical"] = bool(
                np.array_equal(ref.view(np.uint32), out.view(np.uint32))
            )
        degree, u_deg = d, _u_degree(family, d)
    else:
        coeffs, verification, spec, degree, u_deg = (), {}, None, None, None
        lower = evidence.get(max_degree)
    return MinDegreeResult(
        target=prob.target.name,
        fmt=fmt,
        family=family,
        criterion=criterion,
        form=_form(family),
        degree=degree,
        degree_in_u=u_deg,
        lower_bound=lower_bound,
        proven_minimum=degree is not None and lower_bound == degree,
        clamp=prob.clamp,
        fit_interval=L,
        scale=s,
        coefficients=tuple(coeffs),
        coefficients_hex=tuple(polyspec._hex(c, "float32") for c in coeffs),
        verification=verification,
        lower=lower,
        tried=tried,
        classes=class_counts(prob),
        tail_reachability=tail_reachability(prob),
        near_tie_ulps=prob.near_tie_ulps,
        timings={
            "problem": prob.seconds,
            "proofs": proof_s,
            "fits": fit_s,
            "total": time.perf_counter() - t0,
        },
        spec=spec,
    )


# ---------------------------------------------------------------- output


def _g(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.3g}"


def _proof_cell(r: MinDegreeResult) -> str:
    ev = r.lower
    if r.degree is None or r.degree == 0:
        return "- (degree 0)" if r.degree == 0 else "-"
    if ev is None:
        return "not attempted"
    if ev.proven:
        f32 = f"float32: s_lb {_g(ev.s_lb)} > {_g(ev.alpha / (1 - ev.beta))}"
    elif ev.certificate_ok and ev.s_lb <= 0:
        f32 = f"open: real LP feasible (s* {_g(ev.s_star)})"
    else:
        f32 = f"open: {ev.note or 'bound too weak'} (s_lb {_g(ev.s_lb)})"
    real = f"real: s_lb {_g(ev.exact_s_lb)}" + ("" if ev.exact_proven else " (not infeasible)")
    return f"{f32}; {real}"


def render_markdown(results) -> str:
    """Markdown: one row per result (minimum degree, the proof for the degree below, clamp,
    excluded inputs per class, verification, time), then the coefficients."""
    results = [results] if isinstance(results, MinDegreeResult) else list(results)
    lines = [
        "| target | format | criterion | family | degree of P (in \\|x\\|) | degree − 1 infeasible "
        "(units of the Horner bound) | clamp | excluded: tail / tie / near-tie (N) | "
        "verified: max ulp, inputs | time |",
        "|---|---|---|---|---:|---|---:|---|---|---:|",
    ]
    for r in results:
        if r.degree is None:
            deg = f">= {r.lower_bound} (none found)"
        elif r.proven_minimum:
            deg = f"**{r.degree}** ({r.degree_in_u})"
        else:
            deg = f"{r.lower_bound}..{r.degree} ({r.degree_in_u})"
        c = r.classes
        exc = (
            f"{c['tail']['excluded']} / {c['tie']['excluded']} / "
            f"{c['near_tie']['excluded']} ({r.near_tie_ulps:g})"
        )
        v = r.verification
        ver = f"{v['max_ulp']}, {v['checked']}" if v else "-"
        lines.append(
            f"| {r.target} | {r.fmt} | {r.criterion} | {r.family} | {deg} | {_proof_cell(r)} | "
            f"{r.clamp:g} | {exc} | {ver} | {r.timings['total']:.1f} s |"
        )
    lines += [
        "",
        "| case | form | fit interval | coefficients c_0 .. c_d (float32) |",
        "|---|---|---:|---|",
    ]
    for r in results:
        if r.degree is None:
            continue
        lines.append(
            f"| {r.target} {r.fmt} {r.criterion} {r.family} | {r.form} | {r.fit_interval:g} | "
            f"{', '.join(r.coefficients_hex)} |"
        )
    return "\n".join(lines) + "\n"
