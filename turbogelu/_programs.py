"""The kernels' polynomial programs evaluated with PyTorch's operations.

``program(row, tier, part)`` reads one program back from the compiled table (the op
``torch.ops.turbogelu._program``, kernels/common/programs.cpp: the kernels' own constants), and
``evaluate`` runs it as kernels/include/turbogelu/family_eval.h does, step for step: v = |x|
(or x*x), z = fma(v, scale, -1), P(z) by Horner, the form's reconstruction, the floors, and the
asymptote beyond the clamp (exp2: the range reduction x = n + f and 2^n in two halves). The
fused multiply-adds are ``fma``'s; by default a multiply then an add, which PyTorch's eager
operations give (so the result is within a rounding or two of the kernel's, not its bits).

What it is for: derivatives. ``derivative`` differentiates a program through autograd (the
rounding steps of exp2's reduction detached: n is piecewise constant), which gives the second
derivatives of the backward ops (turbogelu/_autograd.py), differentiable again in turn. It
needs none of the lab (turbogelu/approx/).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

_ops = torch.ops.turbogelu

# family_eval.h's Form, by value
FORMS = (
    "HalfPlusOdd",
    "Odd",
    "XHalfPlusEven",
    "XHalfPlus",
    "Even",
    "Exp2Nearest",
    "Exp2Floor",
    "HalfPlusSigned",
    "XHalfPlusNonNeg",
)
# exp2's window and rounding constant per working type (family_eval.h's Exp2Limits)
_EXP2_LIMITS = {torch.float32: (-151.0, 129.0), torch.float64: (-1076.0, 1025.0)}


@dataclass(frozen=True)
class Program:
    """One program of the kernels' table (family_eval.h's FamilyProgram and its shape)."""

    form: str
    y: bool  # P's variable is x*x rather than |x|
    w: bool  # the window is decided on x*x <= clamp^2 rather than |x| <= clamp
    clamp: float
    scale: float
    below: float  # the result below -clamp
    above: float  # the result above +clamp
    coefficients: tuple[float, ...]  # low order first


@functools.cache
def program(row: str, tier: str = "accurate", part: str = "forward") -> Program:
    """Program ``part`` ("forward", "direct", "matched" or "default") of the table's row
    ``row`` (an op of turbogelu/_table.py, or gelu_none / gelu_tanh) in ``tier``."""
    form, n, y, w, clamp, scale, below, above, c = _ops._program(row, tier, part)
    return Program(FORMS[form], y, w, clamp, scale, below, above, tuple(c[:n]))


def every_program() -> dict:
    """{(row, tier, part): Program} for every row of the kernels' table."""
    from . import _table

    rows = [o.name for o in _table.GELU] + [o.name for o in _table.OPS]
    return {
        (row, tier, part): program(row, tier, part)
        for row in rows
        for tier in _table.TIERS
        for part in ("forward", "direct", "matched")
    }


class Torch:
    """The operations ``evaluate`` runs, as PyTorch's eager operations on tensors (autograd
    flows through them; the multiply-adds unfused). turbogelu/_inductor.py has the same
    operations for Inductor's generated code, with true fused multiply-adds."""

    @staticmethod
    def const(v: float, like):
        return torch.full_like(like, v)

    mul = staticmethod(torch.mul)
    add = staticmethod(torch.add)
    abs = staticmethod(torch.abs)
    gt = staticmethod(torch.gt)
    lt = staticmethod(torch.lt)
    where = staticmethod(torch.where)
    copysign = staticmethod(torch.copysign)

    @staticmethod
    def fma(a, b, c):
        return a * b + c

    @staticmethod
    def clamp(x, lo: float, hi: float):
        return x.clamp(lo, hi)

    @staticmethod
    def rint(t):
        """t rounded to an integer, half to even (the magic-number addition's rounding),
        detached: n is piecewise constant. Returns (n, a handle pow2 takes)."""
        n = torch.round(t).detach()
        return n, n

    @staticmethod
    def pow2(n, handle):
        """(2^floor(n/2), 2^(n - floor(n/2))): two factors, so that neither overflows."""
        half = torch.floor(n * 0.5)
        return torch.exp2(half), torch.exp2(n - half)


TORCH = Torch()


def _horner(z, coefficients, B):
    p = B.const(coefficients[-1], z)
    for c in reversed(coefficients[:-1]):
        p = B.fma(p, z, B.const(c, z))
    return p


def _exp2(p: Program, x, B, wide: bool):
    """2^x (family_eval.h's exp2_eval): xc = x clamped to the window, n = rint(xc) (rint(xc -
    1/2) for Exp2Floor), f = xc - n by an FMA, P(f) times 2^n in two halves.

    A backend with ``select_window`` (Inductor's) reduces x itself and selects the program's
    values at the window's ends where x is beyond them: the same value for every x (inside
    the window the clamp is the identity; NaN compares false both ways and stays NaN), with
    the selects off the chain that every element waits on (see _inductor.Inductor)."""
    working = torch.float64 if wide else torch.float32
    lo, hi = _EXP2_LIMITS[working]
    if not getattr(B, "select_window", False):
        return _exp2_reduced(p, B.clamp(x, lo, hi), B)
    at_lo, at_hi = _exp2_reduced(p, torch.tensor([lo, hi], dtype=working), TORCH).tolist()
    r = _exp2_reduced(p, x, B)
    r = B.where(B.lt(x, B.const(lo, x)), B.const(at_lo, x), r)
    return B.where(B.gt(x, B.const(hi, x)), B.const(at_hi, x), r)


def _exp2_reduced(p: Program, xc, B):
    """exp2's program after the clamp: xc = n + f, P(f) 2^n."""
    t = B.add(xc, B.const(-0.5, xc)) if p.form == "Exp2Floor" else xc
    n, handle = B.rint(t)
    f = B.fma(n, B.const(-1.0, n), xc)
    low, high = B.pow2(n, handle)
    return B.mul(B.mul(_horner(f, p.coefficients, B), low), high)


def evaluate(p: Program, x, B=TORCH, wide: bool | None = None):
    """``p`` at ``x`` in the operations of ``B`` (family_eval.h's family_eval, step for step):
    float32 or float64 tensors with the default ``B``; ``wide``: x is float64 (taken from x's
    dtype for tensors)."""
    if wide is None:
        wide = x.dtype == torch.float64
    if p.form.startswith("Exp2"):
        return _exp2(p, x, B, wide)
    v = B.mul(x, x) if p.y else B.abs(x)
    poly = _horner(B.fma(v, B.const(p.scale, v), B.const(-1.0, v)), p.coefficients, B)
    half = B.const(0.5, x)
    if p.form == "HalfPlusOdd":
        r = B.fma(x, poly, half)
    elif p.form == "Odd":
        r = B.mul(x, poly)
    elif p.form == "XHalfPlusEven":
        r = B.mul(x, B.fma(x, poly, half))
    elif p.form in ("XHalfPlus", "XHalfPlusNonNeg"):
        r = B.add(B.mul(x, half), poly)
    elif p.form == "HalfPlusSigned":
        r = B.add(half, B.copysign(poly, x))
    else:  # Even
        r = poly
    zero = B.const(0.0, x)
    if p.form in ("XHalfPlusNonNeg", "HalfPlusSigned"):
        r = B.where(B.lt(r, zero), zero, r)  # the floor at +0; NaN passes
    if p.w:
        outside = B.gt(v, B.const(p.clamp * p.clamp, v))
    else:
        outside = B.gt(B.abs(x) if p.y else v, B.const(p.clamp, x))
    positive = B.gt(x, zero)
    if p.form in ("XHalfPlusEven", "XHalfPlus"):
        tail = B.where(positive, x, B.const(-0.0, x))
    elif p.form == "XHalfPlusNonNeg":
        tail = B.where(positive, x, B.const(p.below, x))
    else:
        tail = B.where(positive, B.const(p.above, x), B.const(p.below, x))
    return B.where(outside, tail, r)


def _horner_with_derivative(z, coefficients):
    """P(z) and P'(z) by one Horner pass (the derivative's recurrence beside P's)."""
    p = torch.full_like(z, coefficients[-1])
    dp = torch.zeros_like(z)
    for c in reversed(coefficients[:-1]):
        dp = dp * z + p
        p = p * z + c
    return p, dp


def derivative(p: Program, x: torch.Tensor) -> torch.Tensor:
    """d/dx of ``p`` at ``x``, in x's dtype (16-bit computed in float32): the derivative of
    the program itself, written out by the chain rule through its steps (so that it composes
    with every autograd mode: it is PyTorch operations on x); 0 beyond the clamp where the
    tails are constants, 1 where the tail is x; 0 where a floor holds the result at +0."""
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    return _derivative(p, work).to(x.dtype)


def _derivative(p: Program, x: torch.Tensor) -> torch.Tensor:
    if p.form.startswith("Exp2"):  # 2^n P(f), f = xc - n: 2^n P'(f) inside the window
        lo, hi = _EXP2_LIMITS[torch.float64 if x.dtype == torch.float64 else torch.float32]
        xc = x.clamp(lo, hi)
        n = torch.round(xc - 0.5 if p.form == "Exp2Floor" else xc).detach()
        _, dp = _horner_with_derivative(xc - n, p.coefficients)
        half = torch.floor(n * 0.5)
        d = dp * torch.exp2(half) * torch.exp2(n - half)
        return torch.where((x < lo) | (x > hi), torch.zeros_like(d), d)
    if p.y:
        v, dv = x * x, 2 * x
    else:
        v, dv = x.abs(), torch.sign(x)
    poly, dpoly = _horner_with_derivative(v * p.scale - 1.0, p.coefficients)
    dz = dpoly * (dv * p.scale)  # d/dx P(z(x))
    if p.form in ("HalfPlusOdd", "Odd"):  # x P (+ 1/2)
        d = poly + x * dz
    elif p.form == "XHalfPlusEven":  # x^2 P + x/2
        d = 2 * x * poly + x * x * dz + 0.5
    elif p.form in ("XHalfPlus", "XHalfPlusNonNeg"):  # x/2 + P
        d = 0.5 + dz
    elif p.form == "HalfPlusSigned":  # 1/2 + sign(x) P
        d = torch.sign(x) * dz
    else:  # Even
        d = dz
    if p.form in ("XHalfPlusNonNeg", "HalfPlusSigned"):  # the floor holds the result at +0
        d = torch.where(evaluate(p, x) <= 0, torch.zeros_like(d), d)
    outside = (v > p.clamp * p.clamp) if p.w else ((x.abs() if p.y else v) > p.clamp)
    if p.form in ("XHalfPlusEven", "XHalfPlus", "XHalfPlusNonNeg"):
        tail = (x > 0).to(x.dtype)  # the tail x (above) and a constant (below)
    else:
        tail = torch.zeros_like(x)
    return torch.where(outside, tail, d)
