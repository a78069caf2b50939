"""Exponential negative tails for sigmoid and SiLU (issue 17): below a threshold T the
accurate tier's polynomial program is replaced by e^x / (1 + e^x), written as a float32
kernel would run it and replayed here one rounding per operation; measured against the
shipped polynomial program the way ``family_programs`` measures it.

Why: the tier asks of sigmoid and SiLU only an absolute error <= 3e-5 below x = -3
(``family_programs.ONE_ULP_FROM``), and the polynomial meets that, but its relative error
there grows without bound (the function decays like e^x, the polynomial's absolute error does
not): in bfloat16 SiLU's tail is up to ~14,000 ulp off. A program that stays within 1 ulp
there too needs the exponential itself.

The tail branch (``tail_branch``), for x < T, every float operation rounded once to float32
(``replay.Arith``, and ``TailArith``'s correctly rounded division):

1. xc = max(x, X_MIN): below X_MIN = -110 both functions are 0 / -0.0 in float32
   (110 e^-110 < 2^-150), and x = -inf becomes finite.
2. Range reduction, x log2 e = n + f, |f| <= 1/2: k = fma(xc, L2E, 1.5 2^23) rounds
   xc log2 e to the nearest integer in k's last bits (the "magic number" addition),
   n = k - 1.5 2^23 (exact); then f from the exact product xc L2E by FMA:
   ``reduction="split"``: f = fma(xc, L2E_LO, fma(xc, L2E, -n)), log2 e = L2E + L2E_LO
   carried to 48 bits (the Cody-Waite idea in the log2 domain), |error of f| ~ 2^-24;
   ``reduction="single"``: f = fma(xc, L2E, -n), one FMA fewer, but the constant's own error
   |log2 e - L2E| = 1.9e-8 times |x| (up to 110) enters f (2^-19 relative in 2^f at x = -110).
3. p = 2^f by a polynomial of degree d on [-1/2, 1/2] (Horner, d FMAs): the lab's exp2
   family with p(0) = 1 (``exp2.Family(..., endpoints="left")``), a relative minimax on
   ``exp2.MINIMAX_SAMPLES`` points (``exp2.fit_minimax``), coefficients rounded to float32.
4. 2^n, subnormal and zero results included, with one rounding: n lies in [-159, 0] for
   x <= 0, so 2^(n + 64) is a normal float32 built from k's bits by two integer operations
   (bits(k) << 23 + (127 + 64) << 23: k's bits are those of 1.5 2^23 plus n), M = p 2^(n+64)
   is exact, and the one rounding is the final multiply by 2^-64: E = fl(M 2^-64) = fl(e^x).
   Lanes with x > 0 compute garbage there (2^(n+64) overflows its exponent field) that the
   final select drops; no result depends on them.
5. The quotient by 1 + E (d = fl(1 + E)):
   ``divide="div"``: a float32 division, correctly rounded (IEEE: x86 divps, CUDA's
   default-precision '/' or __fdiv_rn), so the replay is bit-exact on any such hardware;
   ``divide="poly"``: no division, 1/(1 + E) ~ Q(E), a degree-``q_degree`` minimax of
   1/(1 + E) on [0, e^T] (Horner, FMAs) and one multiply (a hardware reciprocal estimate and
   a Newton step would cost rcp + 2 FMAs + 1 multiply and is not bit-reproducible across
   ISAs: rcp14 / rcpps / rcp.approx differ, so it is not replayed here).
   sigmoid = E / d (or E Q(E)); SiLU = fl(fl(xc M) / d) 2^-64 (or fl(fl(xc M) Q(E)) 2^-64):
   x enters before the last scaling, so a subnormal SiLU result is rounded once, not
   computed from an already subnormal e^x. (xc, not x: at x = -inf, x M would be -inf.)

Above T the shipped polynomial program runs unchanged (``polyspec.replay`` of
data/specs/<function>/accurate.json's forward). A SIMD kernel evaluates both branches for
every element and selects, so its per-element cost is the sum of the two, plus the compare
and the select (``op_counts``).

The default (``DEFAULT``): T = -3 (the tier's boundary), the single reduction, 2^f of degree
3 and the division: the cheapest that keeps every 16-bit input within 1 ulp (a degree-3 2^f
has relative error ~1e-4 < 2^-13, below half a float16 ulp's 2^-12; degree 2 does not hold).
``SCAN`` lists the others ``exp_tail_report`` measures, among them the exponential on the
whole line (``threshold=None``: u = -|x|, E = e^u, sigmoid = (x < 0 ? E : 1) / (1 + E),
SiLU = (x < 0 ? fl(xc M) / d 2^-64 : x / d), no polynomial at all), for comparison.

Measurements (``measure``, ``exp_tail_report``): float32 on family_programs' grid extended
over the negative tail to -112 (beyond the polynomial's clamp the exponential branch is what
runs), errors beyond half a float32 ulp of the result, and every bfloat16 and float16 input
(ulps to the correctly rounded value, within-1-ulp counts in x < -3 and everywhere).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import mpmath
import numpy as np
from scipy.optimize import linprog

from . import exp2, report, rounding
from . import family_programs as fp
from .polyspec import PolySpec, replay
from .replay import Arith, poly

F32 = np.float32
F64 = np.float64
FUNCTIONS = ("sigmoid", "silu")
THRESHOLD = -3.0
X_MIN = -110.0
MAGIC = 1.5 * 2.0**23
BIAS = 64
REDUCTIONS = ("split", "single")
DIVIDES = ("div", "poly")
DEFAULT_DEGREE = 3
DEFAULT_Q_DEGREE = 2
# The float32 grid's negative extension: x = -k 2^-11 down to this (beyond X_MIN the results
# are 0 / -0.0; the grid shows it).
GRID_END = -112.0


def _f32(v: float) -> float:
    return float(F32(v))


def _log2e_split() -> tuple[float, float]:
    """log2 e = L2E + L2E_LO + O(2^-49): L2E = fl32(log2 e), L2E_LO = fl32(log2 e - L2E)."""
    with mpmath.workdps(50):
        l2e = 1 / mpmath.log(2)
        hi = _f32(float(l2e))
        lo = _f32(float(l2e - mpmath.mpf(hi)))
    return hi, lo


L2E, L2E_LO = _log2e_split()


# ---------------------------------------------------------------- the constants


@functools.cache
def exp2_coefficients(degree: int = DEFAULT_DEGREE) -> tuple[float, ...]:
    """2^f on [-1/2, 1/2]: c_0 = 1, c_1..c_d a relative minimax (exp2.fit_minimax on
    exp2.MINIMAX_SAMPLES points of [-1/2, 1/2]), rounded to float32; low order first."""
    if not (isinstance(degree, int) and 2 <= degree <= 8):
        raise ValueError(f"degree must be an int in [2, 8], got {degree!r}")
    fam = exp2.Family(f"D{degree}", "poly", degree, endpoints="left")
    s = np.linspace(-0.5, 0.5, exp2.MINIMAX_SAMPLES)
    c = fam.coefficients(exp2.fit_minimax(fam, s, relative=True))["monomial"]
    return tuple(float(v) for v in rounding.round_to_format(np.array(c), "float32"))


@functools.cache
def recip_coefficients(threshold: float = THRESHOLD, degree: int = DEFAULT_Q_DEGREE):
    """Q(E) ~ 1/(1 + E) on [0, e^T]: relative minimax on 4097 points (a linear program),
    rounded to float32; low order first."""
    if not (isinstance(degree, int) and 1 <= degree <= 6):
        raise ValueError(f"degree must be an int in [1, 6], got {degree!r}")
    a = math.exp(threshold) * (1 + 2.0**-20)
    e = np.linspace(0.0, a, 4097)
    target = 1.0 / (1.0 + e)
    basis = np.vander(e, degree + 1, increasing=True) / target[:, None]  # relative
    m, k = basis.shape
    ones = np.ones((m, 1))
    res = linprog(
        np.r_[np.zeros(k), 1.0],
        A_ub=np.vstack([np.hstack([basis, -ones]), np.hstack([-basis, -ones])]),
        b_ub=np.r_[np.ones(m), -np.ones(m)],
        bounds=[(None, None)] * (k + 1),
        method="highs",
    )
    if not res.success:
        raise RuntimeError(f"minimax LP for 1/(1+E) failed: {res.message}")
    return tuple(float(v) for v in rounding.round_to_format(res.x[:k], "float32"))


@dataclass(frozen=True)
class Variant:
    """One exponential program: the threshold T below which it runs (None: on the whole line,
    no polynomial; module docstring), the reduction ("single" | "split"), the degree of 2^f,
    the quotient ("div" | "poly", the latter only with a threshold) and Q's degree for "poly".

    The default is the cheapest that holds 1 ulp on every 16-bit input (measured, and a
    degree-3 2^f's relative error, ~1e-4 < 2^-13, guarantees it in float16 and bfloat16)."""

    threshold: float | None = THRESHOLD
    reduction: str = "single"
    degree: int = DEFAULT_DEGREE
    divide: str = "div"
    q_degree: int = DEFAULT_Q_DEGREE

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {self.reduction!r}")
        if self.divide not in DIVIDES:
            raise ValueError(f"divide must be one of {DIVIDES}, got {self.divide!r}")
        if self.threshold is None:
            if self.divide != "div":
                raise ValueError("the whole-line program (threshold None) divides: divide='div'")
        elif not (X_MIN < self.threshold <= 0.0):
            raise ValueError(f"threshold must be in ({X_MIN:g}, 0] or None, got {self.threshold!r}")
        exp2_coefficients(self.degree)  # validates the degree
        if self.divide == "poly":
            recip_coefficients(self.threshold, self.q_degree)

    @property
    def name(self) -> str:
        where = "whole line" if self.threshold is None else f"x < {self.threshold:g}"
        div = "E/(1+E)" if self.divide == "div" else f"E Q{self.q_degree}(E)"
        return f"exp ({where}): 2^f degree {self.degree}, {self.reduction} reduction, {div}"

    def describe(self) -> dict:
        d = {
            "name": self.name,
            "threshold": self.threshold,
            "reduction": self.reduction,
            "exp2_degree": self.degree,
            "exp2_coefficients": [float.hex(c) for c in exp2_coefficients(self.degree)],
            "log2e": [float.hex(L2E)] + ([float.hex(L2E_LO)] if self.reduction == "split" else []),
            "x_min": X_MIN,
            "divide": self.divide,
        }
        if self.divide == "poly":
            d["q_degree"] = self.q_degree
            q = recip_coefficients(self.threshold, self.q_degree)
            d["q_coefficients"] = [float.hex(c) for c in q]
        return d


DEFAULT = Variant()
# The variants exp_tail_report measures besides the default: the other reduction and degrees,
# the division-free quotient, and the exponential on the whole line (no polynomial).
SCAN = (
    Variant(degree=2),
    DEFAULT,
    Variant(reduction="split"),
    Variant(divide="poly"),
    Variant(degree=4, reduction="split"),
    Variant(degree=5, reduction="single"),
    Variant(degree=5, reduction="split"),
    Variant(threshold=None),
    Variant(threshold=None, degree=5, reduction="split"),
)


# ---------------------------------------------------------------- the replay


class TailArith(Arith):
    """float32 ``Arith`` with the exponential's other operations: a correctly rounded
    division (the float64 quotient of two float32 values rounded to float32: 53 >= 2 * 24 + 2,
    so the double rounding is innocuous, subnormal results included; a test checks it against
    rational arithmetic), max (NaN propagates), select, and 2^(n + shift) from k's bits
    (two integer operations)."""

    def __init__(self):
        super().__init__("float32", fused=True)

    def div(self, a, b):
        self.counts["div"] += 1
        with np.errstate(all="ignore"):
            return self.round(np.divide(a, b))

    def max(self, a, b):
        self.counts["max"] += 1
        return np.maximum(a, b)

    def select(self, cond, a, b):
        self.counts["select"] += 1
        return np.where(cond, a, b)

    def pow2(self, n, shift: int):
        """2.0^(n + shift) for integer-valued arrays n (exact; garbage-free stand-in for the
        kernel's bits(k) << 23 + (127 + shift) << 23 where n + shift is out of range)."""
        self.counts["int"] += 2
        with np.errstate(all="ignore"):
            e = np.where(np.isfinite(n), n, 0.0) + shift
            return np.ldexp(1.0, np.clip(e, -1000, 1000).astype(np.int64))


def _exp(ar: TailArith, u, variant: Variant):
    """(xc, M, E) for u <= 0: xc = max(u, X_MIN), M = p(f) 2^(n + 64) exact, E = fl(M 2^-64)
    = fl(e^xc) (module docstring, steps 1-4)."""
    xc = ar.max(u, X_MIN)
    k = ar.fma(xc, L2E, MAGIC)
    n = ar.add(k, -MAGIC)
    if variant.reduction == "split":
        f = ar.fma(xc, L2E_LO, ar.fma(xc, L2E, -n))
    else:
        f = ar.fma(xc, L2E, -n)
    p = poly(ar, f, list(exp2_coefficients(variant.degree)))
    m = ar.mul(p, ar.pow2(n, BIAS))  # exact: p 2^(n + 64) is a normal float32
    return xc, m, ar.mul(m, 2.0**-BIAS)  # e^x, rounded once


def _check_function(function: str) -> str:
    if function not in FUNCTIONS:
        raise ValueError(f"function must be one of {FUNCTIONS}, got {function!r}")
    return function


def tail_branch(function: str, x, variant: Variant = DEFAULT, ar: TailArith | None = None):
    """The exponential branch's float32 result (float64 values of float32) at every x.

    With a threshold: meaningful for x <= 0 (the kernel uses it for x < T). With threshold
    None, the whole-line program: u = -|x| (a bit operation), E = e^u and the numerator
    selected by the sign (sigmoid: E or 1; SiLU: xc M scaled by 2^-64, or x)."""
    _check_function(function)
    ar = TailArith() if ar is None else ar
    with np.errstate(all="ignore"):
        x = np.asarray(x, F64)
        whole = variant.threshold is None
        xc, m, e = _exp(ar, -np.abs(x) if whole else x, variant)
        if variant.divide == "poly":
            q = poly(ar, e, list(recip_coefficients(variant.threshold, variant.q_degree)))
            if function == "sigmoid":
                return ar.mul(e, q)
            return ar.mul(ar.mul(ar.mul(xc, m), q), 2.0**-BIAS)
        d = ar.add(1.0, e)
        neg = x < 0
        if function == "sigmoid":
            return ar.div(ar.select(neg, e, 1.0) if whole else e, d)
        num = ar.mul(xc, m)
        if whole:
            num = ar.select(neg, num, x)
            return ar.mul(ar.div(num, d), ar.select(neg, 2.0**-BIAS, 1.0))
        return ar.mul(ar.div(num, d), 2.0**-BIAS)


@functools.cache
def polynomial(function: str) -> PolySpec:
    """The shipped accurate-tier forward program of ``function`` (data/specs)."""
    return fp.programs(fp.load(_check_function(function)))["forward"]


def replay_polynomial(function: str, x) -> np.ndarray:
    """The shipped program alone (``polyspec.replay``), float32."""
    with np.errstate(invalid="ignore"):
        return replay(polynomial(function), np.asarray(x, F32))


def replay_exp_tail(function: str, x, variant: Variant = DEFAULT) -> np.ndarray:
    """The exponential-tail program in float32: ``tail_branch`` where x < T, the shipped
    polynomial program (``polyspec.replay``) elsewhere (NaN included: it fails x < T).
    threshold None: ``tail_branch`` everywhere."""
    with np.errstate(invalid="ignore"):
        x = np.asarray(x, F32)
    tail = tail_branch(function, x.astype(F64), variant).astype(F32)
    if variant.threshold is None:
        return tail
    return np.where(x < F32(variant.threshold), tail, replay_polynomial(function, x))


# ---------------------------------------------------------------- operation counts

_KINDS = ("fma", "mul", "add", "div", "max", "int", "select")


def _tally(counts) -> dict:
    n = {k: int(counts.get(k, 0)) for k in _KINDS}
    return {**n, "float": n["fma"] + n["mul"] + n["add"] + n["div"]}


def op_counts(function: str, variant: Variant = DEFAULT) -> dict:
    """Operations per element, counted by running the programs.

    ``polynomial``: ``PolySpec.op_count`` (fma + mul + add inside the window; |x| and the
    window's compare and select not counted). ``exp_branch``: float fma / mul / add / div
    (``float`` is their sum), the clamp's max, the integer operations of 2^(n + 64) and the
    selects of the whole-line program. ``simd``: what a SIMD kernel runs per element: with a
    threshold both branches (every element evaluates both, then selects on x < T: one compare
    and one select more); without, the exponential alone."""
    ps = polynomial(function)
    pc = ps.op_count("horner", fma=True)
    ar = TailArith()
    tail_branch(function, np.array([-5.0, 5.0]), variant, ar)
    t = _tally(ar.counts)
    poly_ops = {**{k: pc.get(k, 0) for k in _KINDS}, "float": pc["total"]}
    if variant.threshold is None:
        simd = {**t, "compare": 0}
    else:
        simd = {k: t[k] + poly_ops[k] for k in (*_KINDS, "float")}
        simd["select"] += 1
        simd["compare"] = 1
    return {
        "polynomial": {k: poly_ops[k] for k in ("fma", "mul", "add", "float")},
        "exp_branch": t,
        "simd": simd,
        "simd_float_vs_polynomial": simd["float"] / pc["total"],
        "note": (
            "a SIMD kernel evaluates both branches for every element and selects on x < T, so "
            "its per-element cost is the sum of the two plus one compare and one select"
            if variant.threshold is not None
            else "the exponential on the whole line: no polynomial, no threshold"
        )
        + "; a division counts as one operation here but costs several FMAs' throughput",
    }


# ---------------------------------------------------------------- measurements


def _grid(ps: PolySpec, positive_far: bool = False) -> np.ndarray:
    """family_programs.float32_errors' grid (u = k 2^-11 on [0, L], the CLAMP_NEIGHBOURS
    float32 values below fl(L), both signs) and x = -k 2^-11 from -L down to GRID_END (and
    up to -GRID_END with ``positive_far``, for a program without the positive asymptote)."""
    L = F32(ps.clamp)
    u = np.arange(int(float(L) / fp.GRID_STEP) + 1, dtype=F64) * fp.GRID_STEP
    bits = L.view(np.int32)
    near = np.arange(bits - fp.CLAMP_NEIGHBOURS, bits + 1, dtype=np.int32)
    pos = np.concatenate([u, near.view(F32).astype(F64)])
    k0 = int(float(L) / fp.GRID_STEP) + 1
    far = np.arange(k0, int(-GRID_END / fp.GRID_STEP) + 1, dtype=F64) * fp.GRID_STEP
    parts = [-pos, pos, -far] + ([far] if positive_far else [])
    return np.concatenate(parts).astype(F32)


def float32_errors(function: str, evaluate, tail_below: float = THRESHOLD, asymptote=True):
    """The float32 result on ``_grid``: max |error| beyond half a float32 ulp of the result
    over the grid and in x < ``tail_below``, and there the ulp distance to the float64
    reference rounded to float32. ``asymptote``: the program runs the polynomial's asymptote
    beyond +L, whose error (``targets.Target.tail_error``, the same for the polynomial and
    the exponential tail) counts in max_abs_float32, the whole line's; otherwise the grid
    runs to -GRID_END on the positive side too."""
    ps = polynomial(function)
    x = _grid(ps, positive_far=not asymptote)
    got = np.asarray(evaluate(x), F32).astype(F64)
    exact = ps.tgt.f(x.astype(F64))
    err = np.abs(got - exact) - rounding.ulp_of(got, "float32") / 2
    tail = x < F32(tail_below)
    want32 = rounding.round_to_format(exact, "float32")
    ulps = rounding.ulp_distance(got[tail], want32[tail], "float32")
    i = int(np.argmax(err))
    j = int(np.argmax(np.where(tail, err, -np.inf)))
    grid = max(float(err[i]), 0.0)
    asym = ps.tgt.tail_error(float(F32(ps.clamp))) if asymptote else 0.0
    return {
        "max_abs_float32": max(grid, asym),
        "grid_max_abs_float32": grid,
        "grid_argmax": float(x[i]),
        "positive_asymptote_error": asym if asymptote else None,
        "tail": {
            "region": f"x < {tail_below:g} on the grid",
            "points": int(tail.sum()),
            "max_abs_beyond_half_ulp": max(float(err[j]), 0.0),
            "argmax": float(x[j]),
            "max_ulp_float32": int(ulps.max()),
            "within_1_ulp_float32": int((ulps <= 1).sum()),
        },
        "grid": "family_programs.float32_errors' grid (u = k 2^-11 on [0, L] and the "
        f"{fp.CLAMP_NEIGHBOURS} float32 values below fl(L), both signs) and x = -k 2^-11 "
        f"from -L to {GRID_END:g}"
        + ("" if asymptote else f" and from L to {-GRID_END:g}")
        + "; errors beyond half a float32 ulp of the result; ulps against the float64 "
        "reference rounded to float32"
        + ("; beyond +L the asymptote's error (targets.Target.tail_error)" if asymptote else ""),
    }


def sixteen_bit_errors(function: str, evaluate, fmt: str) -> dict:
    """Every finite ``fmt`` input (``report.exhaustive``): ulps to the correctly rounded
    value everywhere, in x >= -3 (the tier's 1-ulp region) and in the tail x < -3, with the
    absolute error beyond half an ulp of the result (the tier's bound in the tail), as
    ``family_programs.sixteen_bit_errors`` counts them; and the largest input over 1 ulp."""
    rep = report.exhaustive(evaluate, function, fmt)
    exact = report.reference_table(function, fmt)[2]
    valid = ~np.isnan(rep.want)
    x, ulps = rep.x, rep.ulps
    with np.errstate(invalid="ignore"):
        beyond = np.abs(rep.got - exact) - rounding.ulp_of(rep.got, fmt) / 2
    start = fp.ONE_ULP_FROM[function]

    def region(m) -> dict:
        return {
            "inputs": int(m.sum()),
            "max_ulp": int(ulps[m].max()),
            "over_1_ulp": int((ulps[m] > 1).sum()),
            "within_1_ulp": int((ulps[m] <= 1).sum()),
            "pct_correctly_rounded": 100.0 * float(np.mean(ulps[m] == 0)),
            "max_abs_beyond_half_ulp": float(max(beyond[m].max(), 0.0)),
        }

    tail = valid & (x < start)
    miss = valid & (ulps > 1)
    return {
        "everywhere": region(valid),
        "one_ulp_region": {"region": f"x >= {start:g}", **region(valid & (x >= start))},
        "tail": {
            "region": f"x < {start:g}",
            **region(tail),
            "over_abs_bound": int((beyond[tail] > fp.ABS_BOUND).sum()),
        },
        "largest_x_over_1_ulp": float(x[miss].max()) if miss.any() else None,
    }


def measure(function: str, evaluate, asymptote: bool = True) -> dict:
    """float32 (``float32_errors``, tail x < -3) and both 16-bit formats of one program."""
    return {
        "float32": float32_errors(function, evaluate, fp.ONE_ULP_FROM[function], asymptote),
        **{fmt: sixteen_bit_errors(function, evaluate, fmt) for fmt in fp.FORMATS},
    }


def measure_variant(function: str, variant: Variant = DEFAULT) -> dict:
    return measure(
        function,
        lambda x: replay_exp_tail(function, x, variant),
        asymptote=variant.threshold is not None,
    )


def holds(m: dict, one_ulp_everywhere: bool) -> bool:
    """The tier's bounds (float32 <= 3e-5; 16-bit within 1 ulp for x >= -3, <= 3e-5 beyond
    half an ulp below), and with ``one_ulp_everywhere`` within 1 ulp on every 16-bit input."""
    ok = m["float32"]["max_abs_float32"] <= fp.ABS_BOUND
    for fmt in fp.FORMATS:
        ok &= m[fmt]["one_ulp_region"]["over_1_ulp"] == 0 and m[fmt]["tail"]["over_abs_bound"] == 0
        if one_ulp_everywhere:
            ok &= m[fmt]["everywhere"]["over_1_ulp"] == 0
    return bool(ok)


def _row(variant_name: str, m: dict, ops: dict) -> dict:
    """One line of the scan: the tail figures and the per-element cost."""
    row = {"program": variant_name}
    for fmt in fp.FORMATS:
        t = m[fmt]["tail"]
        row[f"{fmt}_max_ulp"] = m[fmt]["everywhere"]["max_ulp"]
        row[f"{fmt}_tail_max_ulp"] = t["max_ulp"]
        row[f"{fmt}_tail_within_1_ulp"] = f"{t['within_1_ulp']}/{t['inputs']}"
        row[f"{fmt}_tail_pct_correctly_rounded"] = t["pct_correctly_rounded"]
    row["float32_max_abs"] = m["float32"]["max_abs_float32"]
    row["float32_tail_max_abs"] = m["float32"]["tail"]["max_abs_beyond_half_ulp"]
    row["float32_tail_max_ulp"] = m["float32"]["tail"]["max_ulp_float32"]
    row["simd_float_ops"] = ops["simd"]["float"]
    row["simd_div"] = ops["simd"]["div"]
    row["holds_tier"] = holds(m, False)
    row["within_1_ulp_everywhere"] = holds(m, True)
    return row


def exp_tail_report(function: str, variant: Variant = DEFAULT, scan: bool = True) -> dict:
    """The shipped polynomial program and its exponential-tail variant, measured alike.

    {"function", "threshold", "variant" (its constants), "polynomial" and "exp_tail"
    (``measure``: float32, bfloat16, float16), "holds" (tier / 1 ulp everywhere, per program),
    "ops" (``op_counts``), and with ``scan`` "scan": one row per program of ``SCAN`` and the
    polynomial (16-bit max ulp, tail within-1-ulp and correctly rounded shares, float32 errors,
    SIMD float operations)}. JSON-able; a few seconds per function (the first call also
    builds the correctly rounded 16-bit references)."""
    _check_function(function)
    poly_m = measure(function, lambda x: replay_polynomial(function, x))
    exp_m = measure_variant(function, variant)
    ops = op_counts(function, variant)
    out = {
        "function": function,
        "threshold": variant.threshold,
        "variant": variant.describe(),
        "polynomial": poly_m,
        "exp_tail": exp_m,
        "holds": {
            "polynomial": {"tier": holds(poly_m, False), "one_ulp_everywhere": holds(poly_m, True)},
            "exp_tail": {"tier": holds(exp_m, False), "one_ulp_everywhere": holds(exp_m, True)},
        },
        "ops": ops,
    }
    if scan:
        pc = ops["polynomial"]
        rows = [_row("polynomial (shipped)", poly_m, {"simd": {**pc, "div": 0}})]
        for v in SCAN:
            m = exp_m if v == variant else measure_variant(function, v)
            rows.append(_row(v.name, m, op_counts(function, v)))
        out["scan"] = rows
    return out


def render_markdown(reports) -> str:
    """The ``scan`` rows of one or more ``exp_tail_report`` results as one markdown table."""
    head = (
        "| function | program | bf16 max ulp | bf16 x<-3 within 1 ulp (CR %) | fp16 max ulp | "
        "fp16 x<-3 within 1 ulp (CR %) | f32 max abs | f32 x<-3 max abs | f32 x<-3 max ulp | "
        "SIMD float ops (div) |"
    )
    out = [head, "|" + "---|" * 10]
    for rep in [reports] if isinstance(reports, dict) else reports:
        for r in rep["scan"]:
            cells = [rep["function"], r["program"]]
            for fmt in fp.FORMATS:
                cells.append(str(r[f"{fmt}_max_ulp"]))
                pct = r[f"{fmt}_tail_pct_correctly_rounded"]
                cells.append(f"{r[f'{fmt}_tail_within_1_ulp']} ({pct:.2f})")
            cells += [
                f"{r['float32_max_abs']:.3g}",
                f"{r['float32_tail_max_abs']:.3g}",
                str(r["float32_tail_max_ulp"]),
                f"{r['simd_float_ops']} ({r['simd_div']})",
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
