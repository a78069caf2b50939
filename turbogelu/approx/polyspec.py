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
format (float32, or the coefficient format itself), by Horner or Estrin, with or without FMA:
``replay.run`` of the spec's ``replay_program()`` (the arithmetic and the operation orders live
in ``replay.py``, which the shipped kernels' replay uses too). Two orders ("programs") exist:

* ``"generic"``: u = |x|, y = u*u, t = fma(v, scale, -1), p = P(t), the factor's
  multiplications, and the last one fused with the reduction's constant part:
  ``fma(y, p, x/2)`` (x/2 + even), ``fma(x, p, 1/2)`` (1/2 + odd), ``x * p`` (odd), ...;
  the window is ``|x| <= fl(L_c)``. (At x = -0.0 ``fma(0, p, -0.0)`` is +0.0.)
* ``"turbogelu"``: the shipped kernels' sequence (``replay.py``, ``family_eval.h``):
  ``h = fma(x, P(z), 1/2)``, forward ``x * h``, backward ``h``, with the window decided on
  ``fl(x*x) <= fl(L_c * L_c)`` (variable "y": the GELU kernels) or on ``|x| <= fl(L_c)``
  (variable "u": the activation family's, ``family_eval.h``). Only for the forms those
  kernels have (shift, factor 2 for "x/2 + even" targets, factor 1 for "1/2 + odd" ones);
  unlike the generic order it keeps the sign of -0.0 in "x/2 + even" (x * h).

The two window tests agree for every x of the working format (the squares of neighbouring
floats near L_c lie at least sqrt(2) ulps of L_c^2 apart, so rounding never merges them); the
programs differ in the order of the final operations only, by rounding (tests/test_polyspec.py).

``turbogelu_form()`` (also ``TURBOGELU_FORM``) is the shipped exact-GELU forward spec as a
PolySpec, and ``replay`` reproduces ``replay.forward32`` bit for bit with it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field

import numpy as np

from . import rounding, targets
from .replay import Arith, DepthArith, Program, program, run

VARIABLES = ("u", "y")
PROGRAMS = ("generic", "turbogelu")
JSON_KIND = "turbogelu.polyspec"
JSON_VERSION = 1
JSON_INDENT = 2  # as the committed packed specs (spec.SCHEMAS["packed"])


def _hex(v: float, fmt: str) -> str:
    """Exact hex text of a value of ``fmt``: C-literal style (rounding.f32_hex) below float64."""
    v = float(v)
    if fmt == "float64" or not math.isfinite(v):
        return float.hex(v)
    return rounding.f32_hex(v)


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
            if want is None or (self.shift, self.factor) != (True, want):
                raise ValueError(
                    "program 'turbogelu' is the kernels' x (1/2 + x P(z)) / 1/2 + x Q(z): it "
                    "needs shift, and factor 2 (x/2 + even) or 1 (1/2 + odd)"
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
        ar = Arith("float32", fused=fma)
        program(self.replay_program(), ar, np.array([0.5]), scheme)
        n = {k: ar.counts[k] for k in ("fma", "mul", "add")}
        return {**n, "total": sum(n.values())}

    def dependency_depth(self, scheme: str = "horner", fma: bool = True) -> int:
        """Length of the longest chain of dependent operations in ``replay``'s program (the
        operations ``op_count`` counts; an unfused FMA is a multiply then an add), from x to
        the in-window result. With every operation of the same latency (FMA, multiply and add
        are on current x86 and ARM cores) it is the latency of one element in units of that
        latency: what a scheme that parallelizes (Estrin) shortens, while ``op_count`` is the
        throughput cost. Found by running the program on depths instead of values."""
        out, _ = program(self.replay_program(), DepthArith(fused=fma), np.zeros(1), scheme)
        return int(np.max(out))

    def replay_program(self) -> Program:
        """The kernel program of this spec, as ``replay.run`` evaluates it."""
        tgt = self.tgt
        return Program(
            coefficients=self.coefficients,
            reduction=tgt.reduction,
            parity=tgt.residual_parity,
            variable=self.variable,
            factor=self.factor,
            scale=self.scale,
            order=self.program,
            clamp=self.clamp,
            asymptote=None if tgt.asymptote_kind is None else tgt.asymptote,
            floor=0.0 if tgt.nonnegative else None,
        )

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
        # The packed specs are PolySpec documents, written as spec.dumps writes them.
        return json.dumps(self.to_dict(), indent=JSON_INDENT) + "\n"

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


# ---------------------------------------------------------------- the replay


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
    each FMA is rounded once, also in float16 / bfloat16 (``replay.round_sum``), as hardware FMA
    is.
    Outside the window the target's asymptote; NaN stays NaN (it fails the window test).
    """
    if precision not in ("float32", "target"):
        raise ValueError(f"precision must be 'float32' or 'target', got {precision!r}")
    work = "float32" if precision == "float32" else ps.fmt
    out = run(ps.replay_program(), x, work, fused=fma, scheme=scheme)
    return out.astype(np.float64 if work == "float64" else np.float32)
