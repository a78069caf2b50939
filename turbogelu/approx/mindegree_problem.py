"""The problem of a minimum-degree case (``mindegree.py``): every finite input of a format,
its correctly rounded value, the acceptable outputs, the excluded inputs and the clamp.

Acceptable outputs
------------------
CR(x) is the correctly rounded f(x) (``report.reference_table``: float64, mpmath near
midpoints). Criterion ``"faithful"``: the format values at most 1 step (``ulp_distance``) from
CR(x); ``"correct"``: CR(x) only; ``"bounded"``: faithful for x >= -3, and below -3 also any
format value v with |v - f(x)| <= 3e-5 + ulp(v)/2 (the float32 bound plus the rounding to the
format; ``BOUNDED_TAIL``): what the kernels' exhaustive bfloat16 tests hold them to
(tests/test_accuracy.py; their float16 tests ask less on [-3, 0)) and issue 13's condition on a
16-bit program with fewer operations. Each set is a run of consecutive format values, [jlo,
jhi] as ordered integers (``rounding.to_ordered``), and ``interval_of_values`` turns it into
the real interval [mlo, mhi] between the rounding boundaries (midpoints) beyond it and the
float32 interval [lo, hi] of the float32 outputs that round into it: a boundary is a float32
number and a tie there goes to the even neighbour, so lo is the boundary itself when the set's
end value is even, and the next float32 number inside otherwise (no margin is needed: both
ends are exact and closed).

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
every clamp (for the float32 proof: with the evaluation variable of fit interval L;
``mindegree_proof.py``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from . import report, rounding, targets

F32 = np.float32
F64 = np.float64
CRITERIA = {"faithful": 1, "correct": 0, "bounded": 1}
# "bounded": below x0 an output is judged by its absolute error instead (x0, bound).
BOUNDED_TAIL = (-3.0, 3e-5)
CLASSES = ("tail", "tie", "near_tie")
NEAR_TIE_ULPS = 4.0


# ---------------------------------------------------------------- acceptable outputs


def step32(v, up: bool) -> np.ndarray:
    """The float32 neighbour above (below) float32 values v, as float64."""
    v = np.asarray(v, F64).astype(F32)
    return np.nextafter(v, F32(np.inf) if up else F32(-np.inf)).astype(F64)


def rounding_interval(cr, fmt: str, k: int):
    """The inputs' acceptable outputs: fmt values within k steps of ``cr``
    (``interval_of_values`` of that run of values)."""
    o = rounding.to_ordered(cr, fmt)
    return interval_of_values(o - k, o + k, fmt)


def interval_of_values(jlo, jhi, fmt: str):
    """The fmt values with ordered integers in [jlo, jhi], as intervals of outputs.

    Returns ``(mlo, mhi, lo, hi)``: the real interval ends (rounding boundaries of fmt, the
    midpoints between the last acceptable value and the first unacceptable one) and the
    float32 interval [lo, hi]: a float32 value o rounds (to nearest even) into the acceptable
    set iff lo <= o <= hi. A boundary m is a float32 number; a tie there goes to the even
    neighbour, so lo = m when the acceptable end value is even and the next float32 above m
    otherwise (hi likewise). Beyond the largest finite value the boundary is max + ulp/2 (a
    tie there rounds to infinity, which is even); an acceptable infinity makes the end
    infinite.
    """
    top = rounding.max_ordered(fmt)
    top_mid = rounding.overflow_threshold(fmt)
    out = []
    for sign, j_in in ((-1, np.asarray(jlo, np.int64)), (1, np.asarray(jhi, np.int64))):
        j_out = j_in + sign
        a, b = rounding.from_ordered(j_in, fmt), rounding.from_ordered(j_out, fmt)
        with np.errstate(invalid="ignore"):
            mid = np.where(np.abs(j_out) > top, np.copysign(top_mid, b), 0.5 * (a + b))
        mid = np.where(np.abs(j_in) > top, sign * np.inf, mid)
        even = j_in % 2 == 0
        f32 = np.where(even | np.isinf(mid), mid, step32(mid, up=sign < 0))
        out.append((mid, f32))
    (mlo, lo), (mhi, hi) = out
    return mlo, mhi, lo, hi


def within_abs(exact, fmt: str, bound: float):
    """Ordered ends [jl, jh] of the fmt values v with |v - exact| <= bound + ulp(v)/2
    (tests/test_accuracy.py's bound with the half ulp of the result), by bisection: v - ulp(v)/2
    and v + ulp(v)/2 both increase with v. Finite ``exact`` only."""
    exact = np.asarray(exact, F64)
    top = rounding.max_ordered(fmt)

    def ok_below(j):  # v - ulp(v)/2 <= exact + bound
        v = rounding.from_ordered(j, fmt)
        return v - rounding.ulp_of(v, fmt) / 2 <= exact + bound

    def ok_above(j):  # v + ulp(v)/2 >= exact - bound
        v = rounding.from_ordered(j, fmt)
        return v + rounding.ulp_of(v, fmt) / 2 >= exact - bound

    # jh: the largest j with ok_below(j); jl: the smallest with ok_above(j)
    lo_j, hi_j = np.full(exact.shape, -top, np.int64), np.full(exact.shape, top, np.int64)
    a, b = lo_j.copy(), hi_j.copy()
    while np.any(a < b):
        m = (a + b + 1) // 2
        good = ok_below(m)
        a, b = np.where(good, m, a), np.where(good, b, m - 1)
    jh = a
    a, b = lo_j.copy(), hi_j.copy()
    while np.any(a < b):
        m = (a + b) // 2
        good = ok_above(m)
        a, b = np.where(good, a, m + 1), np.where(good, m, b)
    return a, jh


def acceptable_values(x, cr, exact, fmt: str, criterion: str):
    """Ordered ends [jlo, jhi] of each input's acceptable fmt values, and the mask of the
    inputs judged by absolute error (criterion "bounded", x < BOUNDED_TAIL[0])."""
    o = rounding.to_ordered(cr, fmt)
    k = CRITERIA[criterion]
    jlo, jhi = o - k, o + k
    by_abs = np.zeros(np.shape(x), bool)
    if criterion == "bounded":
        x0, bound = BOUNDED_TAIL
        by_abs = np.asarray(x, F64) < x0
        jl, jh = within_abs(exact[by_abs], fmt, bound)
        jlo[by_abs] = np.minimum(jlo[by_abs], jl)
        jhi[by_abs] = np.maximum(jhi[by_abs], jh)
    return jlo, jhi, by_abs


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

    Under "bounded" the inputs judged by absolute error (below -3) are in no class: their
    acceptable interval is at least 6e-5 wide, far beyond the float32 resolution there.
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
    if criterion == "bounded":
        head = x >= BOUNDED_TAIL[0]
        tail, tie, near = tail & head, tie & head, near & head
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
    jlo: np.ndarray  # ordered ends of the acceptable format values
    jhi: np.ndarray
    by_abs: np.ndarray  # judged by absolute error ("bounded" below -3)
    mlo: np.ndarray
    mhi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    asym_ok: np.ndarray
    clamp: float
    window: np.ndarray
    seconds: float


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
    jlo, jhi, by_abs = acceptable_values(x, cr, ex, fmt, criterion)
    mlo, mhi, lo, hi = interval_of_values(jlo, jhi, fmt)
    asym = rounding.to_ordered(report.round_output(t.asymptote(x).astype(F32), fmt), fmt)
    asym_ok = (jlo <= asym) & (asym <= jhi)
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
        jlo,
        jhi,
        by_abs,
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
