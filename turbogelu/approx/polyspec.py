"""PolySpec: one polynomial approximation of a target, the form every fitting method produces.

A spec approximates the residual of a target (``targets.py``) on ``u = |x|`` in ``[0, L_i]``:

    r(u) ~ u^factor * P(t),   P(t) = sum_k c_k t^k,
    v = u (variable "u") or v = u^2 (variable "y"),
    t = v, or with ``shift`` the normalized t = z = v * scale - 1, scale = fl(2 / V),
    V = L_i or L_i^2 (the variable at the fit interval's end), so z runs over [-1, 1],

and the full function is the target's reconstruction (x/2 + r, 1/2 + sign(x) r, ...) for
``|x| <= L_c`` (the clamp) and the target's asymptote beyond. ``scale`` is rounded to the
coefficient format ``fmt`` like the coefficients, and the basis, the float64 evaluation and the
replay all use that rounded value (as the shipped fit does), so they describe one function.

``replay`` runs the spec the way a kernel does, every operation rounded once to the working
format (float32, or the coefficient format itself), by Horner or Estrin, with or without FMA.
Two operation orders ("programs") exist:

* ``"generic"``: u = |x|, y = u*u, t = fma(v, scale, -1), p = P(t), the factor's
  multiplications, and the last one fused with the reduction's constant part:
  ``fma(y, p, x/2)`` (x/2 + even), ``fma(x, p, 1/2)`` (1/2 + odd), ``x * p`` (odd), ...;
  the window is ``|x| <= fl(L_c)``. (At x = -0.0 ``fma(0, p, -0.0)`` is +0.0.)
* ``"turbogelu"``: the shipped kernels' sequence (``replay.py``, ``poly_eval.h``):
  ``h = fma(x, P(z), 1/2)``, forward ``x * h``, backward ``h``, with the window decided on
  ``fl(x*x) <= fl(L_c * L_c)``. Only for the forms those kernels have (variable "y", shift,
  factor 2 for "x/2 + even" targets, factor 1 for "1/2 + odd" ones).

The two window tests agree for every x of the working format (the squares of neighbouring
floats near L_c lie at least sqrt(2) ulps of L_c^2 apart, so rounding never merges them); the
programs differ in the order of the final operations only, by rounding (tests/test_polyspec.py).

``turbogelu_form()`` (also ``TURBOGELU_FORM``) is the shipped exact-GELU forward spec as a
PolySpec, and ``replay`` reproduces ``replay.forward32`` bit for bit with it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import rounding, spec, targets

VARIABLES = ("u", "y")
PROGRAMS = ("generic", "turbogelu")
SCHEMES = ("horner", "estrin")
JSON_KIND = "turbogelu.polyspec"
JSON_VERSION = 1


def _hex(v: float, fmt: str) -> str:
    """Exact hex text of a value of ``fmt``: C-literal style (spec.f32_hex) below float64."""
    v = float(v)
    if fmt == "float64" or not math.isfinite(v):
        return float.hex(v)
    return spec.f32_hex(v)


@dataclass(frozen=True)
class PolySpec:
    """A polynomial approximation of ``targets.TARGETS[target]`` (module docstring for the form).

    ``coefficients`` (c_0 .. c_degree, low order first) must be values of ``fmt``; a target
    without asymptote (exp2_frac) has ``clamp = inf``. ``meta`` is free JSON-able data
    (errors, fit settings) and takes no part in comparisons.
    """

    target: str
    variable: str
    factor: int
    shift: bool
    degree: int
    fit_interval: float
    clamp: float
    fmt: str
    coefficients: tuple[float, ...]
    method: str = ""
    program: str = "generic"
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        tgt = targets.get(self.target)
        coeffs = tuple(float(c) for c in self.coefficients)
        object.__setattr__(self, "coefficients", coeffs)
        object.__setattr__(self, "fit_interval", float(self.fit_interval))
        object.__setattr__(self, "clamp", float(self.clamp))
        object.__setattr__(self, "meta", dict(self.meta))
        if self.variable not in VARIABLES:
            raise ValueError(f"variable must be one of {VARIABLES}, got {self.variable!r}")
        rounding.check_rounding_format(self.fmt)
        if self.program not in PROGRAMS:
            raise ValueError(f"program must be one of {PROGRAMS}, got {self.program!r}")
        if not (isinstance(self.factor, int) and 0 <= self.factor <= 8):
            raise ValueError(f"factor must be an int in [0, 8], got {self.factor!r}")
        if not (isinstance(self.degree, int) and 0 <= self.degree <= 32):
            raise ValueError(f"degree must be an int in [0, 32], got {self.degree!r}")
        if len(coeffs) != self.degree + 1:
            raise ValueError(f"degree {self.degree} needs {self.degree + 1} coefficients")
        c = np.array(coeffs)
        if not np.all(np.isfinite(c)) or not np.all(rounding.round_to_format(c, self.fmt) == c):
            bad = [
                v
                for v in coeffs
                if not (math.isfinite(v) and rounding.round_to_format(v, self.fmt) == v)
            ]
            raise ValueError(f"coefficient(s) not finite values of {self.fmt}: {bad[:3]}")
        if not (0 < self.fit_interval < math.inf):
            raise ValueError(f"fit_interval must be positive and finite, got {self.fit_interval}")
        if tgt.asymptote_kind is None and self.clamp != math.inf:
            raise ValueError(f"{self.target} has no asymptote: clamp must be inf")
        if not self.clamp > 0:
            raise ValueError(f"clamp must be positive, got {self.clamp}")
        if self.program == "turbogelu":
            want = {"x/2 + even": 2, "1/2 + odd": 1}.get(tgt.reduction)
            if want is None or (self.variable, self.shift, self.factor) != ("y", True, want):
                raise ValueError(
                    "program 'turbogelu' is the kernels' x (1/2 + x P(z)) / 1/2 + x Q(z): it "
                    "needs variable 'y', shift, and factor 2 (x/2 + even) or 1 (1/2 + odd)"
                )

    # ------------------------------------------------------------ the function in float64

    @property
    def tgt(self) -> targets.Target:
        return targets.TARGETS[self.target]

    @property
    def scale(self) -> float | None:
        """fl(2 / V) in ``fmt`` (V = L_i or L_i^2), or None without shift."""
        if not self.shift:
            return None
        end = self.fit_interval if self.variable == "u" else self.fit_interval**2
        return float(rounding.round_to_format(2.0 / end, self.fmt))

    def poly_variable(self, u) -> np.ndarray:
        """t(u): v = u or u^2, then z = v * scale - 1 with shift (float64)."""
        u = np.asarray(u, np.float64)
        v = u if self.variable == "u" else u * u
        return v * self.scale - 1.0 if self.shift else v

    def basis(self, u) -> np.ndarray:
        """phi_k(u) = u^factor t(u)^k, k = 0..degree: an (n, degree + 1) float64 array."""
        u = np.asarray(u, np.float64).ravel()
        t = self.poly_variable(u)
        return (u**self.factor)[:, None] * np.vander(t, self.degree + 1, increasing=True)

    def residual_approx(self, u) -> np.ndarray:
        """u^factor P(t(u)) in float64 (the basis times the coefficients)."""
        u = np.asarray(u, np.float64)
        return (self.basis(u) @ np.array(self.coefficients)).reshape(u.shape)

    def evaluate(self, x) -> np.ndarray:
        """The full approximation in float64: reconstruction inside the clamp, asymptote out."""
        x = np.asarray(x, np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            out = self.tgt.reconstruct(x, self.residual_approx(np.abs(x)))
        if self.tgt.asymptote_kind is None:
            return out
        return np.where(np.abs(x) > self.clamp, self.tgt.asymptote(x), out)

    def op_count(self, scheme: str = "horner", fma: bool = True) -> dict:
        """Floating-point operations per element of ``replay``'s program inside the window.

        Counted: multiplies (the constant x/2 included), adds, FMAs; with ``fma=False`` each
        FMA is a multiply and an add. Not counted: |x|, sign changes (bit operations) and the
        window's compare and select (one each, the same for every form); fl(L_c^2) is a
        constant. ``total`` is fma + mul + add. Counted by running the program itself.
        """
        ar = _Arith("float32", fused=fma)
        _program(self, ar, np.array([0.5]), scheme)
        n = {k: ar.counts[k] for k in ("fma", "mul", "add")}
        return {**n, "total": sum(n.values())}

    def dependency_depth(self, scheme: str = "horner", fma: bool = True) -> int:
        """Length of the longest chain of dependent operations in ``replay``'s program (the
        operations ``op_count`` counts; an unfused FMA is a multiply then an add), from x to
        the in-window result. With every operation of the same latency (FMA, multiply and add
        are on current x86 and ARM cores) it is the latency of one element in units of that
        latency: what a scheme that parallelizes (Estrin) shortens, while ``op_count`` is the
        throughput cost. Found by running the program on depths instead of values."""
        out, _ = _program(self, _DepthArith(fused=fma), np.zeros(1), scheme)
        return int(np.max(out))

    def describe(self) -> str:
        """One line: the form, interval, clamp, format, method and program."""
        if self.shift:
            end = f"{self.fit_interval:g}" + ("^2" if self.variable == "y" else "")
            var = f"P(z), z = 2 {self.variable} / {end} - 1"
        else:
            var = f"P({self.variable})"
        return (
            f"{self.target} ({self.tgt.reduction}): r(u) ~ u^{self.factor} {var}, degree "
            f"{self.degree}, fit on [0, {self.fit_interval:g}], clamp {self.clamp:g}, "
            f"{self.fmt} coefficients, {self.method or 'unknown method'}, program {self.program}"
        )

    # ------------------------------------------------------------ building and storing

    @classmethod
    def template(cls, target: str, degree: int, fit_interval: float, **form) -> PolySpec:
        """A spec with zero coefficients, for fitting methods to take ``basis`` from.

        Defaults: the target's natural form (variable "y" and its natural factor when the
        residual has a parity, "u" and factor 0 for exp2_frac), shift, float32, clamp =
        fit_interval (inf for a target without asymptote), program "generic".
        """
        tgt = targets.get(target)
        defaults = {
            "variable": "u" if tgt.residual_parity == "none" else "y",
            "factor": tgt.natural_factor,
            "shift": True,
            "clamp": fit_interval if tgt.asymptote_kind else math.inf,
            "fmt": "float32",
        }
        kw = {**defaults, **form}
        return cls(
            target=target,
            degree=degree,
            fit_interval=fit_interval,
            coefficients=(0.0,) * (degree + 1),
            **kw,
        )

    def with_coefficients(self, coefficients, *, round_to_fmt: bool = False, **changes):
        """A copy with new coefficients (rounded to nearest in ``fmt`` first if asked) and any
        other fields changed (``dataclasses.replace``)."""
        fmt = changes.get("fmt", self.fmt)
        c = np.asarray(coefficients, np.float64)
        if round_to_fmt:
            c = rounding.round_to_format(c, fmt)
        return dataclasses.replace(
            self, coefficients=tuple(float(v) for v in c), degree=len(c) - 1, **changes
        )

    def to_dict(self) -> dict:
        return {
            "kind": JSON_KIND,
            "version": JSON_VERSION,
            "form": self.describe(),
            "target": self.target,
            "variable": self.variable,
            "factor": self.factor,
            "shift": self.shift,
            "degree": self.degree,
            "fit_interval": float.hex(self.fit_interval),
            "clamp": float.hex(self.clamp),
            "fmt": self.fmt,
            "coefficients": [_hex(c, self.fmt) for c in self.coefficients],
            "coefficients_decimal": list(self.coefficients),
            "method": self.method,
            "program": self.program,
            "meta": self.meta,
        }

    def to_json(self) -> str:
        return spec.dumps(self.to_dict(), "packed")  # the packed specs are PolySpec documents

    @classmethod
    def from_dict(cls, d: dict) -> PolySpec:
        """Inverse of ``to_dict`` (``form`` and ``coefficients_decimal`` are only for readers);
        malformed data raises ValueError."""
        try:
            if d["kind"] != JSON_KIND or d["version"] != JSON_VERSION:
                raise ValueError(f"not a {JSON_KIND} v{JSON_VERSION}: {d['kind']} {d['version']}")
            return cls(
                target=d["target"],
                variable=d["variable"],
                factor=d["factor"],
                shift=d["shift"],
                degree=d["degree"],
                fit_interval=float.fromhex(d["fit_interval"]),
                clamp=float.fromhex(d["clamp"]),
                fmt=d["fmt"],
                coefficients=tuple(float.fromhex(c) for c in d["coefficients"]),
                method=d.get("method", ""),
                program=d.get("program", "generic"),
                meta=d.get("meta", {}),
            )
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed PolySpec data: {e!r}") from e

    @classmethod
    def from_json(cls, text: str) -> PolySpec:
        return cls.from_dict(json.loads(text))


# ---------------------------------------------------------------- rounded arithmetic


def _round_sum(p, c, fmt: str) -> np.ndarray:
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
    midpoint too. So this is exactly one rounding; it equals replay.fma32 for float32, and
    rational arithmetic for all three formats (tests/test_polyspec.py).
    """
    with np.errstate(all="ignore"):
        s = p + c
        bb = s - p
        e = (p - (s - bb)) + (c - bb)  # TwoSum: p + c = s + e exactly (finite values)
        r = rounding.round_to_format(s, fmt)
        other = 2.0 * s - r  # exact: the neighbour of r across s, if s is their midpoint
        inexact = (e != 0) & np.isfinite(e)
        mid = (
            inexact
            & np.isfinite(r)
            & (other != r)
            & (rounding.round_to_format(other, fmt) == other)
        )
        out = np.where(mid & ((e > 0) == (other > r)), other, r)
        under = inexact & (np.abs(s) == rounding.overflow_threshold(fmt)) & ((e > 0) != (s > 0))
        return np.where(under, np.copysign(rounding.max_finite(fmt), s), out)


class _Arith:
    """Operations on float64 arrays holding values of ``fmt``, each rounded once to ``fmt``.

    Products of two values of float32 or narrower are exact in float64 (<= 48 significant bits,
    exponents far inside float64's range), so ``mul`` is one rounding and ``fma`` is one
    rounding of the exact a*b + c (``_round_sum``). float64 itself: numpy's correctly rounded
    mul/add; numpy has no float64 FMA, so ``fused`` is refused there. ``counts`` tallies the
    operations (``PolySpec.op_count``).
    """

    def __init__(self, fmt: str, fused: bool = True):
        if fmt == "float64" and fused:
            raise ValueError("no correctly rounded float64 FMA in numpy: use fma=False")
        self.fmt, self.fused, self.counts = fmt, fused, Counter()

    def round(self, v) -> np.ndarray:
        return rounding.round_to_format(v, self.fmt)

    def mul(self, a, b):
        self.counts["mul"] += 1
        return self.round(np.multiply(a, b))

    def add(self, a, b):
        self.counts["add"] += 1
        if self.fmt == "float64":
            return np.add(a, b)
        return _round_sum(np.asarray(a, np.float64), np.asarray(b, np.float64), self.fmt)

    def fma(self, a, b, c):
        if not self.fused:
            return self.add(self.mul(a, b), c)
        self.counts["fma"] += 1
        return _round_sum(np.multiply(a, b), np.asarray(c, np.float64), self.fmt)

    def const(self, like, c: float) -> np.ndarray:
        """A constant (a coefficient) broadcast to ``like``'s shape."""
        return np.full_like(like, c)


class _DepthArith:
    """``_Arith``'s interface on dependency depths instead of values: an operation's result is
    one deeper than its deepest operand; constants (Python floats, ``const``) have depth 0;
    bit operations (``abs``, sign, select) are free, as in ``op_count``.
    (``PolySpec.dependency_depth``.)"""

    def __init__(self, fused: bool = True):
        self.fused = fused

    @staticmethod
    def round(v):
        return v  # only applied to constants and to depths, which it must not change

    @staticmethod
    def _d(v) -> np.ndarray:
        return np.asarray(v, np.float64) if isinstance(v, np.ndarray) else np.zeros(1)

    def mul(self, a, b):
        return np.maximum(self._d(a), self._d(b)) + 1

    add = mul

    def fma(self, a, b, c):
        if not self.fused:
            return self.add(self.mul(a, b), c)
        return np.maximum(np.maximum(self._d(a), self._d(b)), self._d(c)) + 1

    @staticmethod
    def const(like, c: float) -> np.ndarray:
        return np.zeros_like(like)


def fma_in(a, b, c, fmt: str) -> np.ndarray:
    """Correctly rounded fused multiply-add in ``fmt`` (float32, float16, bfloat16) of values
    of ``fmt`` given as float64 arrays; returns float64 values of ``fmt``."""
    return _Arith(fmt).fma(np.asarray(a, np.float64), np.asarray(b, np.float64), c)


def _poly(ar: _Arith, t, coeffs, scheme: str):
    """P(t) by Horner or by Estrin (the tree of replay.poly32 and poly_eval.h)."""
    c = [float(ar.round(v)) for v in coeffs]
    if scheme == "horner":
        p = ar.const(t, c[-1])
        for ck in reversed(c[:-1]):
            p = ar.fma(p, t, ck)
        return p
    if scheme != "estrin":
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    terms = [ar.const(t, ck) for ck in c]
    power = t
    while len(terms) > 1:
        nxt = [ar.fma(terms[i + 1], power, terms[i]) for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
        if len(terms) > 1:
            power = ar.mul(power, power)
    return terms[0]


def _program(ps: PolySpec, ar: _Arith, x, scheme: str):
    """The in-window result and the quantity the window compares (see the module docstring)."""
    red = ps.tgt.reduction
    scale = float(ar.round(ps.scale)) if ps.shift else None
    if ps.program == "turbogelu":
        y = ar.mul(x, x)
        h = ar.fma(x, _poly(ar, ar.fma(y, scale, -1.0), ps.coefficients, scheme), 0.5)
        return (ar.mul(x, h) if red == "x/2 + even" else h), y
    u = np.abs(x)
    y = ar.mul(u, u) if ps.variable == "y" else None
    v = y if ps.variable == "y" else u
    p = _poly(ar, ar.fma(v, scale, -1.0) if ps.shift else v, ps.coefficients, scheme)
    if ps.variable == "y":
        mults = [y] * (ps.factor // 2) + [u] * (ps.factor % 2)
    else:
        mults = [u] * ps.factor
    for m in mults[:-1]:
        p = ar.mul(m, p)
    last = mults[-1] if mults else None
    if ps.tgt.residual_parity == "odd":  # sign(x) r(|x|): through x itself, or a negation
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


def replay(
    ps: PolySpec,
    x,
    *,
    scheme: str = "horner",
    precision: str = "float32",
    fma: bool = True,
) -> np.ndarray:
    """The spec evaluated as a kernel would, every operation rounded once (see module doc).

    ``precision="float32"``: float32 arithmetic, coefficients and scale rounded to float32
    (exact unless ``fmt`` is float64), x rounded to float32; returns float32 (the value a
    float32 kernel computes before any narrowing store).
    ``precision="target"``: arithmetic in ``fmt`` itself (a native fp16/bf16 kernel): x and
    every intermediate rounded to ``fmt``; returns those values as float32 (float64 for
    fmt="float64", where only ``fma=False`` is available).
    ``fma=False`` splits each FMA into a rounded multiply and a rounded add; with ``fma=True``
    each FMA is rounded once, also in float16 / bfloat16 (``_round_sum``), as hardware FMA is.
    Outside the window the target's asymptote; NaN stays NaN (it fails the window test).
    """
    if precision not in ("float32", "target"):
        raise ValueError(f"precision must be 'float32' or 'target', got {precision!r}")
    work = "float32" if precision == "float32" else ps.fmt
    ar = _Arith(work, fused=fma)
    x = ar.round(np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        out, key = _program(ps, ar, x, scheme)
        if ps.tgt.asymptote_kind is not None:
            limit = float(ar.round(ps.clamp))
            if ps.program == "turbogelu":
                limit = float(ar.round(limit * limit))
            out = np.where(key > limit, ar.round(ps.tgt.asymptote(x)), out)
    return out.astype(np.float64 if work == "float64" else np.float32)


# ---------------------------------------------------------------- the shipped kernel's form


@functools.cache
def turbogelu_form(mode: str = "none", part: str = "forward", path: str | None = None):
    """A shipped kernel spec (data/specs/gelu_<mode>.json) as a PolySpec.

    Forward: target gelu / gelu_tanh, x/2 + u^2 P(z); backward parts: gelu_grad /
    gelu_tanh_grad, 1/2 + sign(x) u Q(z) = 1/2 + x Q(z). Both with z = fma(x*x, 2/R^2, -1),
    fit interval = clamp = R, float32, program "turbogelu". The stored scale must equal the
    PolySpec's fl(2 / R^2) (checked).
    """
    p = Path(path) if path is not None else spec.spec_path(mode)
    data = spec.load(p)
    if part not in spec.PARTS:
        raise ValueError(f"part must be one of {spec.PARTS}, got {part!r}")
    vals = spec.part_values(data[part])
    grad = part != "forward"
    ps = PolySpec(
        target=rounding.gelu_function(data["approximate"], grad),
        variable="y",
        factor=1 if grad else 2,
        shift=True,
        degree=len(vals["coefficients"]) - 1,
        fit_interval=vals["clamp"],
        clamp=vals["clamp"],
        fmt="float32",
        coefficients=tuple(vals["coefficients"]),
        method=data[part]["method"],
        program="turbogelu",
        meta={"source": p.name, "part": part, "generated_by": data["generated_by"]},
    )
    if ps.scale != vals["scale"]:
        raise ValueError(f"{p}: stored scale {vals['scale']!r} != fl(2/R^2) = {ps.scale!r}")
    return ps


def __getattr__(name: str):
    if name == "TURBOGELU_FORM":  # loaded on first use, not at import
        return turbogelu_form()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
