"""Replay of the polynomial kernels' arithmetic in numpy, operation for operation: the one
place the lab evaluates a kernel program.

GELU's shipped kernels (``kernels/include/turbogelu/family_eval.h``'s forms in x^2, with the
window on x^2) evaluate::

    y = fl(x * x)
    z = fma(y, scale, -1)                  # maps [0, R^2] onto [-1, 1]
    p = P(z)                               # Horner (or Estrin) with fused multiply-adds
    forward:  out = fl(x * fma(x, p, 1/2)) # = x/2 + x^2 p, and -0.0 stays -0.0
    backward: out = fl(g * fma(x, p, 1/2)) # = 1/2 + x q

inside the window ``y <= fl(R * R)``, and outside it ``x`` / ``-0.0`` (forward) and
``g * 1`` / ``g * 0`` (backward). ``forward32`` / ``backward32`` reproduce that sequence bit
for bit, so the measured error of a spec is the error the kernel has (a test compares them
bitwise with the compiled kernels).

The same machinery runs every other program of the lab (``Program``, ``run``): the lab's
other forms (``polyspec.PolySpec``: P in u or u^2, a factor u^k, with or without the shift to
z, the target's reduction), in float32 or in the coefficient format itself (float16, bfloat16:
a native 16-bit kernel), with or without FMA. Every operation is rounded once to the working
format (``Arith``); the float64 "kernel" (``forward64``) is the same program unfused in float64.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import rounding

F32 = np.float32
F64 = np.float64
SCHEMES = ("horner", "estrin")
ORDERS = ("generic", "turbogelu")


# ---------------------------------------------------------------- rounded arithmetic


def round_sum(p, c, fmt: str) -> np.ndarray:
    """RN_fmt(p + c) for float64 arrays p, c, rounded once (fmt narrower than float64).

    Computing the FMA a*b + c as "float64, then round to fmt" would round twice: a*b is exact
    in float64, but the float64 sum s need not be (bfloat16 and float32 span exponents far
    wider than 53 bits), and s can land exactly on a midpoint of fmt that p + c is not on
    (e.g. bfloat16: a*b = (1 + 2^-7) * 1.5, a midpoint, plus c = -2^-133, which s drops; the
    tie then goes to even instead of down). For float16 this cannot happen for finite results
    (its exponents span 40 bits, so s is exact whenever it matters), but the guard is general:
    every midpoint of fmt is a float64 number and rounding is monotone, so RN_fmt(s) differs
    from RN_fmt(p + c) only when s is exactly a midpoint and p + c is not; then the exact error
    e of s (TwoSum) says on which side p + c lies. The overflow threshold max + ulp/2 is such a
    midpoint too. So this is exactly one rounding, subnormal results included, for all three
    formats (tests/test_replay.py checks it against rational arithmetic).
    """
    with np.errstate(all="ignore"):
        s = p + c
        bb = s - p
        e = (p - (s - bb)) + (c - bb)  # TwoSum: p + c = s + e exactly (finite values)
        r = rounding.round_to_format(s, fmt)
        other = 2.0 * s - r  # exact: the neighbour of r across s, if s is their midpoint
        inexact = (e != 0) & np.isfinite(e)
        on_mid = (other != r) & (rounding.round_to_format(other, fmt) == other)
        mid = inexact & np.isfinite(r) & on_mid
        out = np.where(mid & ((e > 0) == (other > r)), other, r)
        under = inexact & (np.abs(s) == rounding.overflow_threshold(fmt)) & ((e > 0) != (s > 0))
        return np.where(under, np.copysign(rounding.max_finite(fmt), s), out)


class Arith:
    """Operations on float64 arrays holding values of ``fmt``, each rounded once to ``fmt``.

    Products of two values of float32 or narrower are exact in float64 (<= 48 significant bits,
    exponents far inside float64's range), so ``mul`` is one rounding and ``fma`` is one
    rounding of the exact a*b + c (``round_sum``). float64 itself: numpy's correctly rounded
    mul/add; numpy has no float64 FMA, so ``fused`` is refused there. ``counts`` tallies the
    operations (``polyspec.PolySpec.op_count``).
    """

    def __init__(self, fmt: str, fused: bool = True):
        if fmt == "float64" and fused:
            raise ValueError("no correctly rounded float64 FMA in numpy: use fma=False")
        self.fmt, self.fused, self.counts = fmt, fused, Counter()

    def round(self, v) -> np.ndarray:
        return rounding.round_to_format(v, self.fmt)

    def mul(self, a, b):
        self.counts["mul"] += 1
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0, as the hardware's NaN
            return self.round(np.multiply(a, b))

    def add(self, a, b):
        self.counts["add"] += 1
        if self.fmt == "float64":
            return np.add(a, b)
        return round_sum(np.asarray(a, F64), np.asarray(b, F64), self.fmt)

    def fma(self, a, b, c):
        if not self.fused:
            return self.add(self.mul(a, b), c)
        self.counts["fma"] += 1
        with np.errstate(invalid="ignore", over="ignore"):
            return round_sum(np.multiply(a, b), np.asarray(c, F64), self.fmt)

    def const(self, like, c) -> np.ndarray:
        """A constant (a coefficient, or a row of them) broadcast against ``like``."""
        c = np.asarray(c, F64)
        return np.broadcast_to(c, np.broadcast_shapes(np.shape(like), c.shape)).copy()


class DepthArith:
    """``Arith``'s interface on dependency depths instead of values: an operation's result is
    one deeper than its deepest operand; constants (Python floats, ``const``) have depth 0;
    bit operations (``abs``, sign, select) are free, as in ``op_count``.
    (``polyspec.PolySpec.dependency_depth``.)"""

    def __init__(self, fused: bool = True):
        self.fused = fused

    @staticmethod
    def round(v):
        return v  # only applied to constants and to depths, which it must not change

    @staticmethod
    def _d(v) -> np.ndarray:
        return np.asarray(v, F64) if isinstance(v, np.ndarray) else np.zeros(1)

    def mul(self, a, b):
        return np.maximum(self._d(a), self._d(b)) + 1

    add = mul

    def fma(self, a, b, c):
        if not self.fused:
            return self.add(self.mul(a, b), c)
        return np.maximum(np.maximum(self._d(a), self._d(b)), self._d(c)) + 1

    @staticmethod
    def const(like, c) -> np.ndarray:
        return np.zeros_like(like)


def fma_in(a, b, c, fmt: str) -> np.ndarray:
    """Correctly rounded fused multiply-add in ``fmt`` (float32, float16, bfloat16) of values
    of ``fmt`` given as float64 arrays; returns float64 values of ``fmt``."""
    return Arith(fmt).fma(np.asarray(a, F64), np.asarray(b, F64), c)


def fma32(a, b, c) -> np.ndarray:
    """Correctly rounded float32 fused multiply-add of float32 arrays (``fma_in`` in float32:
    a*b is exact in float64, and the sum is rounded once)."""
    with np.errstate(invalid="ignore"):  # casts of signalling NaNs (quieted, as the FMA does)
        a, b, c = (np.asarray(v, F32).astype(F64) for v in (a, b, c))
        return fma_in(a, b, c, "float32").astype(F32)


# ---------------------------------------------------------------- the polynomial


def poly(ar, t, coeffs, scheme: str = "horner"):
    """P(t) = sum c_k t^k in the arithmetic ``ar``, by Horner or by Estrin (the tree of
    poly_eval.h's eval_poly). ``coeffs``: values of ``ar``'s format, low order first (each may
    be a row of coefficient vectors broadcast against ``t``)."""
    if scheme == "horner":
        p = ar.const(t, coeffs[-1])
        for ck in reversed(coeffs[:-1]):
            p = ar.fma(p, t, ck)
        return p
    if scheme != "estrin":
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    # Estrin: pair terms with t, then pairs of pairs with t^2, t^4, ... (same tree as the header).
    terms = [ar.const(t, ck) for ck in coeffs]
    power = t
    while len(terms) > 1:
        nxt = [ar.fma(terms[i + 1], power, terms[i]) for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
        if len(terms) > 1:
            power = ar.mul(power, power)
    return terms[0]


def poly32(z, coeffs, scheme: str = "horner") -> np.ndarray:
    """P(z) in float32 with FMAs, by Horner or by Estrin; coefficients rounded to float32 (a
    coefficient may be a row of values broadcast against ``z``)."""
    ar = Arith("float32")
    c = [ar.round(v) for v in coeffs]
    with np.errstate(invalid="ignore"):  # casts of signalling NaNs
        return poly(ar, np.asarray(z, F32).astype(F64), c, scheme).astype(F32)


# ---------------------------------------------------------------- programs


@dataclass(frozen=True)
class Program:
    """A polynomial kernel's program, as ``run`` evaluates it.

    r(u) ~ u^factor P(t), u = |x|, v = u (variable "u") or y = fl(u*u) (variable "y"),
    t = fma(v, scale, -1) (or t = v when ``scale`` is None); the result is the reduction's
    reconstruction (``targets.py``: "x/2 + even" -> x/2 + r, "1/2 + odd" -> 1/2 + sign(x) r,
    "odd" -> sign(x) r, "even" / "none" -> r) inside the window and ``asymptote(x)`` beyond it.

    ``order="generic"``: the factor's multiplications, the last one fused with the
    reduction's constant part (``fma(y, p, x/2)``, ``fma(x, p, 1/2)``, ``x * p``, ...); the
    window is ``|x| <= fl(clamp)``. ``order="turbogelu"``: the shipped kernels' sequence
    (module docstring; shifted, factor 2 for "x/2 + even" and 1 for "1/2 + odd"), with the
    window decided on ``fl(x*x) <= fl(fl(clamp)^2)`` in variable "y" and on ``|x| <= fl(clamp)``
    in variable "u" (the activation family's kernels). ``clamp = inf``: no window.
    """

    coefficients: tuple
    reduction: str
    parity: str  # of the residual: "even", "odd" or "none" (targets.Target.residual_parity)
    variable: str = "y"
    factor: int = 2
    scale: float | None = None
    order: str = "generic"
    clamp: float = math.inf
    asymptote: Callable | None = None
    # The in-window result floored here (``targets.Target.nonnegative``: +0.0), by a compare
    # that lets NaN through; None: no floor.
    floor: float | None = None


def program(prog: Program, ar, x, scheme: str = "horner"):
    """The in-window result of ``prog`` at ``x`` (values of ``ar``'s format) and the quantity
    its window compares (|x|, or x*x for the turbogelu order), in the arithmetic ``ar``
    (``Arith``, or ``DepthArith`` for the dependency depth)."""
    red = prog.reduction
    scale = None if prog.scale is None else ar.round(prog.scale)
    coeffs = [ar.round(c) for c in prog.coefficients]
    if prog.order == "turbogelu":
        # In x^2 the window is decided on y = x*x (the GELU kernels); in |x| on u itself (the
        # family's kernels, family_eval.h). Either way x (1/2 + x P) keeps -0.0's sign.
        key = ar.mul(x, x) if prog.variable == "y" else np.abs(x)
        h = ar.fma(x, poly(ar, ar.fma(key, scale, -1.0), coeffs, scheme), 0.5)
        return (ar.mul(x, h) if red == "x/2 + even" else h), key
    u = np.abs(x)
    y = ar.mul(u, u) if prog.variable == "y" else None
    v = y if prog.variable == "y" else u
    p = poly(ar, v if scale is None else ar.fma(v, scale, -1.0), coeffs, scheme)
    if prog.variable == "y":
        mults = [y] * (prog.factor // 2) + [u] * (prog.factor % 2)
    else:
        mults = [u] * prog.factor
    for m in mults[:-1]:
        p = ar.mul(m, p)
    last = mults[-1] if mults else None
    if prog.parity == "odd":  # sign(x) r(|x|): through x itself, or a negation
        if last is u:
            last = x
        else:
            p = np.where(np.signbit(x), -p, p)
    const = {"x/2 + even": lambda: ar.mul(x, 0.5), "1/2 + odd": lambda: 0.5}.get(red)
    if last is None:
        out = p if const is None else ar.add(const(), p)
    else:
        out = ar.mul(last, p) if const is None else ar.fma(last, p, const())
    return out, u


def run(
    prog: Program, x, fmt: str = "float32", *, fused: bool = True, scheme: str = "horner"
) -> np.ndarray:
    """``prog`` evaluated as a kernel would, every operation rounded once to ``fmt`` (x first
    rounded to ``fmt``); returns float64 values of ``fmt``. Outside the window the asymptote
    (rounded to ``fmt``); NaN stays NaN (it fails the window test)."""
    ar = Arith(fmt, fused=fused)
    with np.errstate(all="ignore"):
        x = ar.round(np.asarray(x, F64))
        out, key = program(prog, ar, x, scheme)
        if prog.floor is not None:
            out = np.where(out < prog.floor, prog.floor, out)
        if math.isfinite(prog.clamp):
            limit = float(ar.round(prog.clamp))
            if prog.order == "turbogelu" and prog.variable == "y":
                limit = float(ar.round(limit * limit))
            out = np.where(key > limit, ar.round(prog.asymptote(x)), out)
    return out


# ---------------------------------------------------------------- the shipped kernels


def _relu(x):
    return np.where(x > 0, x, -0.0)  # -0.0 on the left, as gelu(-inf)


def _step(x):
    return np.where(x > 0, 1.0, 0.0)


def kernel_program(spec_part: dict, grad: bool, fmt: str = "float32") -> Program:
    """The shipped kernels' program for a coefficient set (``spec.part_values``): forward
    (grad False) or backward, its clamp, stored scale and coefficients rounded to ``fmt``."""
    r = rounding.round_to_format
    return Program(
        coefficients=tuple(float(r(c, fmt)) for c in spec_part["coefficients"]),
        reduction="1/2 + odd" if grad else "x/2 + even",
        parity="odd" if grad else "even",
        variable="y",
        factor=1 if grad else 2,
        scale=float(r(spec_part["scale"], fmt)),
        order="turbogelu",
        clamp=float(r(spec_part["clamp"], fmt)),
        asymptote=_step if grad else _relu,
    )


def forward32(x, spec_part: dict, scheme: str = "horner") -> np.ndarray:
    """Kernel forward in float32: 0.5x + x^2 P(z) inside the window, x / -0.0 outside."""
    x = np.asarray(x, F32)
    return run(kernel_program(spec_part, False), x, scheme=scheme).astype(F32)


def backward32(x, spec_part: dict, grad=None, scheme: str = "horner") -> np.ndarray:
    """Kernel backward in float32: grad * (0.5 + x Q(z)) inside, grad * (1 | 0) outside."""
    x = np.asarray(x, F32)
    d = run(kernel_program(spec_part, True), x, scheme=scheme).astype(F32)
    g = np.ones_like(x) if grad is None else np.asarray(grad, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        return (g * d).astype(F32)


def forward64(x, spec_part: dict) -> np.ndarray:
    """The same program (float32 coefficients, scale and clamp) unfused in float64, as the
    float64 kernel runs it (not bit-exact to the float32 kernel)."""
    prog = kernel_program(spec_part, False, "float32")
    return run(prog, np.asarray(x, F64), "float64", fused=False)


def backward64(x, spec_part: dict) -> np.ndarray:
    prog = kernel_program(spec_part, True, "float32")
    return run(prog, np.asarray(x, F64), "float64", fused=False)
