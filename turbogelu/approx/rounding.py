"""Rounding to float32 / float16 / bfloat16, ulps, and correctly rounded GELU (numpy + mpmath).

The accuracy tests ask how far a kernel's 16-bit (or float32) result is from the *correctly
rounded* exact value, counted in units in the last place of the output format. This module
provides the pieces, without torch:

* ``round_to(values, fmt)``: float64 -> ``fmt``, round to nearest even, with subnormals and
  overflow to infinity; returned as float64 holding the format's value.
* ``ulp_of(values, fmt)``: the spacing of ``fmt`` at that magnitude (subnormal-aware).
* ``ulp_distance(a, b, fmt)``: how many steps of ``fmt`` separate two representable values
  (ordered integer bit patterns; +0 and -0 are the same point).
* ``round_to_format(values, fmt)``: ``round_to`` that also takes "float64" (no rounding), the
  formats a coefficient or a replay may be in (``ROUNDING_FORMATS``);
  ``to_ordered`` / ``from_ordered`` / ``max_ordered``: values of a format as ordered integers
  (consecutive values one apart), for stepping through neighbours.
* ``correctly_rounded(x, fmt, fn)``: ``fn(x)`` rounded once, correctly, to ``fmt``. The float64
  reference (``reference.gelu`` etc., relative error ~1e-16) decides the rounding, except when
  it lies within a relative ``1e-12`` of a rounding midpoint of ``fmt``; then mpmath decides,
  at 50 digits and more if needed. An exact tie (the exact value on the midpoint to hundreds of
  digits) is rounded to even.
* ``region_table(...)`` / ``format_table(...)``: ulp errors per input region, for the tables
  of ``tests/test_accuracy.py``.

numpy has no bfloat16, so bfloat16 is handled on float32 bit patterns: the float64 value is
first rounded to float32 *to odd* (truncate, then set the last bit if anything was dropped),
then the float32 bits are rounded to nearest even at bit 16. Round-to-odd into a format with at
least two more bits makes the second rounding equal to a single correct rounding, so there is
no double-rounding error (unlike float64 -> float32 -> bfloat16 with round-to-nearest twice,
which is what ``torch.Tensor.to`` does from float64). float16 goes the same way (float32 to
odd, then numpy's float32 -> float16 conversion, which rounds to nearest even).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from . import reference

F32 = np.float32
F64 = np.float64


@dataclass(frozen=True)
class Format:
    name: str
    precision: int  # significant bits, including the implicit one
    emin: int  # exponent of the smallest normal number
    emax: int  # exponent of the largest finite number
    bits: int  # storage width


FORMATS = {
    "float32": Format("float32", 24, -126, 127, 32),
    "float16": Format("float16", 11, -14, 15, 16),
    "bfloat16": Format("bfloat16", 8, -126, 127, 16),
}


def exact_mean(values) -> float:
    """The mean of ``values`` from their correctly rounded sum (``math.fsum``): the same on
    every CPU. ``np.mean`` adds pairwise in blocks unrolled to the SIMD width numpy dispatches
    to, so its last digits differ between, e.g., an AVX-512 and an AVX2 machine. NaN if
    empty."""
    a = np.asarray(values, np.float64).ravel()
    return math.fsum(a.tolist()) / a.size if a.size else float("nan")


def get_format(fmt: str | Format) -> Format:
    if isinstance(fmt, Format):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"format must be one of {tuple(FORMATS)}, got {fmt!r}") from None


def max_finite(fmt: str | Format) -> float:
    f = get_format(fmt)
    return float(np.ldexp(2.0 - 2.0 ** (1 - f.precision), f.emax))


@functools.cache
def overflow_threshold(fmt: str) -> float:
    """The midpoint between the largest finite value of ``fmt`` and the next power of two: from
    there up (a tie goes to the even neighbour, infinity) values round to infinity."""
    top = max_finite(fmt)
    return top + 0.5 * float(ulp_of(top, fmt))


# The formats values may be rounded to: float64 (left as they are) and FORMATS.
ROUNDING_FORMATS = ("float64", *FORMATS)


def check_rounding_format(fmt: str) -> str:
    if fmt not in ROUNDING_FORMATS:
        raise ValueError(f"fmt must be one of {ROUNDING_FORMATS}, got {fmt!r}")
    return fmt


# ---------------------------------------------------------------- rounding


def _to_f32_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded to odd: truncate, and set the last bit when inexact.

    Overflow saturates at the largest finite float32 (odd, so it still rounds to infinity in a
    narrower format); infinities and NaN are kept.
    """
    x = np.asarray(x, F64)
    with np.errstate(over="ignore", invalid="ignore"):
        t = x.astype(F32)  # round to nearest even: the truncation or one step away from zero
        away = np.abs(t.astype(F64)) > np.abs(x)
        t = np.where(away, np.nextafter(t, F32(0.0)), t).astype(F32)
        inexact = np.isfinite(x) & (t.astype(F64) != x)
    bits = t.view(np.uint32)
    return np.where(inexact, bits | np.uint32(1), bits).view(F32)


def bfloat16_bits(values) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of float64 values, rounded to nearest even.

    NaN becomes the quiet NaN 0x7FC0 (sign kept), as c10::BFloat16 and the kernels store it.
    """
    x = np.asarray(values, F64)
    u = _to_f32_odd(x).view(np.uint32).astype(np.uint64)
    # Round to nearest even at bit 16: add 0x7FFF plus the bit that becomes the last one.
    r = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    nan = np.isnan(x)
    qnan = np.where(np.signbit(x), 0xFFC0, 0x7FC0).astype(np.uint64)
    return np.where(nan, qnan, r).astype(np.uint16)


def bfloat16_from_bits(bits) -> np.ndarray:
    """float64 values of bfloat16 bit patterns."""
    b = np.asarray(bits).astype(np.uint16).astype(np.uint32) << np.uint32(16)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        return b.view(F32).astype(F64)


def round_to(values, fmt: str | Format) -> np.ndarray:
    """float64 values rounded to nearest even in ``fmt``, returned as float64 (exact)."""
    f = get_format(fmt)
    x = np.asarray(values, F64)
    with np.errstate(over="ignore", invalid="ignore"):
        if f.name == "float32":
            return x.astype(F32).astype(F64)
        if f.name == "float16":
            return _to_f32_odd(x).astype(np.float16).astype(F64)
    return bfloat16_from_bits(bfloat16_bits(x))


def round_to_format(values, fmt: str) -> np.ndarray:
    """float64 values rounded to nearest (ties to even) in ``fmt``, as float64 (exact).

    ``fmt``: 'float64' (a copy of the values themselves) or a name of ``FORMATS``, with
    subnormals and overflow to infinity: ``round_to``, one correct rounding from float64 (no
    double rounding through float32).
    """
    x = np.asarray(values, dtype=F64)
    if check_rounding_format(fmt) == "float64":
        return x.copy()
    return round_to(x, fmt)


def round_exact(q, fmt: str | Format) -> float:
    """An exact number (int, float, Fraction or mpmath mpf) rounded to nearest even in ``fmt``.

    Slow (pure Python, rational arithmetic) and independent of ``round_to``: the yardstick the
    tests measure ``round_to`` and ``replay.fma32`` against. A zero gives +0.0.
    """
    f = get_format(fmt)
    if isinstance(q, mpmath.mpf):
        if not mpmath.isfinite(q):
            return float(q)
        sign, man, exp, _ = q._mpf_  # man_exp drops the sign
        q = (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)
    elif isinstance(q, float) and not np.isfinite(q):
        return q
    q = Fraction(q)
    if q == 0:
        return 0.0
    sign, a = (-1.0 if q < 0 else 1.0), abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    step = Fraction(2) ** (max(e, f.emin) - f.precision + 1)
    val = round(a / step) * step  # Fraction.__round__: to nearest, ties to even
    if val > Fraction(max_finite(f)):
        return sign * np.inf
    return sign * float(val)


def is_representable(values, fmt: str | Format) -> np.ndarray:
    x = np.asarray(values, F64)
    with np.errstate(invalid="ignore"):
        return (round_to(x, fmt) == x) | np.isnan(x)


def to_bits(values, fmt: str | Format) -> np.ndarray:
    """Bit patterns (as int64) of values representable in ``fmt``; others raise ValueError."""
    f = get_format(fmt)
    x = np.asarray(values, F64)
    if not np.all(is_representable(x, f)):
        bad = x[~is_representable(x, f)]
        raise ValueError(f"{bad.size} value(s) not representable in {f.name}, e.g. {bad.flat[0]!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        if f.name == "float32":
            return x.astype(F32).view(np.uint32).astype(np.int64)
        if f.name == "float16":
            return x.astype(np.float16).view(np.uint16).astype(np.int64)
    return bfloat16_bits(x).astype(np.int64)


def from_bits(bits, fmt: str | Format) -> np.ndarray:
    """float64 values of bit patterns of ``fmt``."""
    f = get_format(fmt)
    b = np.asarray(bits, np.int64)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        if f.name == "float32":
            return b.astype(np.uint32).view(F32).astype(F64)
        if f.name == "float16":
            return b.astype(np.uint16).view(np.float16).astype(F64)
    return bfloat16_from_bits(b)


def ulp_of(values, fmt: str | Format) -> np.ndarray:
    """The ulp of ``fmt`` at the magnitude of each value (float64; need not be representable).

    ``2^(e - p + 1)`` for ``2^e <= |v| < 2^(e+1)``; below the smallest normal the subnormal
    spacing ``2^(emin - p + 1)``; beyond the largest finite value the top binade's spacing;
    inf for infinities and NaN for NaN.
    """
    f = get_format(fmt)
    a = np.abs(np.asarray(values, F64))
    _, e = np.frexp(np.where(np.isfinite(a), a, 1.0))
    e = np.clip(e.astype(np.int64) - 1, f.emin, f.emax)
    e = np.where(a == 0, f.emin, e)
    out = np.ldexp(1.0, e - (f.precision - 1))
    out = np.where(np.isinf(a), np.inf, out)
    return np.where(np.isnan(a), np.nan, out)


# ---------------------------------------------------------------- ordered integers

_F64_MAG_MAX = 0x7FEFFFFFFFFFFFFF  # bits of the largest finite float64


def to_ordered(values, fmt: str | Format) -> np.ndarray:
    """Values of ``fmt`` (or float64) as ordered integers (int64): consecutive representable
    values differ by 1, +0 and -0 are both 0, the largest finite value is ``max_ordered`` and
    infinity one more. Values not representable in ``fmt`` raise ValueError (``to_bits``)."""
    if fmt == "float64":
        bits = np.asarray(values, F64).view(np.int64)
        mag = bits & np.int64(0x7FFFFFFFFFFFFFFF)
        return np.where(bits < 0, -mag, mag)
    f = get_format(fmt)
    bits = to_bits(values, f)
    mag = bits & ((1 << (f.bits - 1)) - 1)
    return np.where((bits >> (f.bits - 1)) & 1 == 1, -mag, mag)


@functools.cache
def max_ordered(fmt: str) -> int:
    """The ordered integer of the largest finite value of ``fmt`` (cached: searches ask it per
    candidate)."""
    if fmt == "float64":
        return _F64_MAG_MAX
    return int(to_ordered(np.array([max_finite(fmt)]), fmt)[0])


def from_ordered(o, fmt: str | Format) -> np.ndarray:
    """The float64 values of ordered integers of ``fmt`` (the inverse of ``to_ordered``; 0 is
    +0.0, and beyond the largest finite value, infinity)."""
    name = fmt.name if isinstance(fmt, Format) else fmt
    o = np.asarray(o, np.int64)
    mag = np.minimum(np.abs(o), max_ordered(name) + 1)
    if name == "float64":
        return np.where(o < 0, mag | np.int64(-0x8000000000000000), mag).view(F64)
    f = get_format(fmt)
    return from_bits(np.where(o < 0, mag | (1 << (f.bits - 1)), mag), f)


def ulp_distance(a, b, fmt: str | Format) -> np.ndarray:
    """Number of steps of ``fmt`` between a and b (int64; both representable, not NaN).

    Consecutive representable values are one step apart, +0 and -0 none, the largest finite
    value and infinity one.
    """
    f = get_format(fmt)
    a = np.asarray(a, F64)
    b = np.asarray(b, F64)
    if np.any(np.isnan(a)) or np.any(np.isnan(b)):
        raise ValueError("ulp_distance is undefined for NaN")
    return np.abs(to_ordered(a, f) - to_ordered(b, f))


# ---------------------------------------------------------------- correctly rounded functions

# name -> (float64 vectorized function, mpmath function of one float at dps digits)
FUNCTIONS: dict[str, tuple[Callable, Callable]] = {
    "gelu": (
        lambda x: reference.gelu(x, "none"),
        lambda v, dps: reference.gelu_mp(v, "none", dps),
    ),
    "gelu_tanh": (
        lambda x: reference.gelu(x, "tanh"),
        lambda v, dps: reference.gelu_mp(v, "tanh", dps),
    ),
    "gelu_grad": (
        lambda x: reference.gelu_grad(x, "none"),
        lambda v, dps: reference.gelu_grad_mp(v, "none", dps),
    ),
    "gelu_tanh_grad": (
        lambda x: reference.gelu_grad(x, "tanh"),
        lambda v, dps: reference.gelu_grad_mp(v, "tanh", dps),
    ),
    # The rest of the activation family (reference.py; targets.py reduces each of them).
    "silu": (reference.silu, reference.silu_mp),
    "silu_grad": (reference.silu_grad, reference.silu_grad_mp),
    "sigmoid": (reference.sigmoid, reference.sigmoid_mp),
    "sigmoid_grad": (reference.sigmoid_grad, reference.sigmoid_grad_mp),
    "tanh": (reference.tanh, reference.tanh_mp),
    "tanh_grad": (reference.tanh_grad, reference.tanh_grad_mp),
    # softplus' = sigmoid.
    "softplus": (reference.softplus, reference.softplus_mp),
    "softplus_grad": (reference.sigmoid, reference.sigmoid_mp),
}


def gelu_function(mode: str, grad: bool = False) -> str:
    """The FUNCTIONS name of GELU (or GELU') of a form: 'none' or 'tanh'."""
    reference.check_mode(mode)
    return ("gelu" if mode == "none" else "gelu_tanh") + ("_grad" if grad else "")


def _resolve(fn) -> tuple[Callable, Callable]:
    if isinstance(fn, str):
        # Registry names only: a GELU mode name ("tanh") would clash with the function tanh;
        # gelu_function(mode) gives the registry name of a GELU form.
        try:
            return FUNCTIONS[fn]
        except KeyError:
            raise ValueError(
                f"fn must be one of {tuple(FUNCTIONS)} or a (float64, mpmath) pair, got {fn!r}"
            ) from None
    f64, fmp = fn
    return f64, fmp


# The precisions mpmath tries in turn; agreement with the midpoint to within ~10^-(dps-8)
# relative at the last one is taken as an exact tie.
MP_DIGITS = (50, 120, 400)


def _mp_side(fmp: Callable, x: float, midpoint: float, dps_list) -> int:
    """Sign of fn(x) - midpoint (0: a tie to all the digits tried)."""
    for dps in dps_list:
        with mpmath.workdps(dps + 10):
            exact = mpmath.mpf(fmp(x, dps))
            d = exact - mpmath.mpf(midpoint)
            if abs(d) > abs(mpmath.mpf(midpoint)) * mpmath.mpf(10) ** (8 - dps):
                return 1 if d > 0 else -1
    return 0


def correctly_rounded(
    x64_values,
    fmt: str | Format,
    fn="gelu",
    *,
    rel: float = 1e-12,
    dps=MP_DIGITS,
    return_stats: bool = False,
):
    """``fn(x)`` correctly rounded to ``fmt`` (round to nearest, ties to even), as float64.

    ``fn``: a name of ``FUNCTIONS`` ('gelu', 'gelu_tanh', 'gelu_grad', 'gelu_tanh_grad',
    'silu', 'sigmoid', 'tanh', ... and their '_grad'; ``gelu_function(mode)`` names a GELU
    form), or a pair (float64 function of an array, mpmath function
    ``f(x: float, dps: int) -> mpf``). The float64 value decides unless it lies within a
    relative ``rel`` of a rounding midpoint of ``fmt``; there mpmath decides which side the exact
    value is on (an exact tie, to ``dps[-1]`` digits, goes to the even neighbour).
    With ``return_stats``, also returns the number of values mpmath decided and of ties.
    """
    f = get_format(fmt)
    f64, fmp = _resolve(fn)
    x = np.asarray(x64_values, F64)
    with np.errstate(all="ignore"):
        v = np.asarray(f64(x), F64)
    out = round_to(v, f)

    # The rounding midpoint of each value's binade: lo and lo + u are its neighbours in fmt.
    # Beyond 2^(emax+1) everything rounds to infinity, so no midpoint there.
    u = ulp_of(v, f)
    candidates = np.isfinite(v) & (np.abs(v) < np.ldexp(1.0, f.emax + 1))
    with np.errstate(all="ignore"):
        k = np.floor(np.where(candidates, v / u, 0.0))  # exact: |v/u| < 2^precision
        mid = (k + 0.5) * u
        near = candidates & (np.abs(v - mid) <= rel * np.abs(mid))
    idx = np.flatnonzero(near.ravel())
    ties = 0
    flat_out = out.ravel().copy()
    for i in idx:
        xi, ki, ui, mi = float(x.flat[i]), k.flat[i], u.flat[i], float(mid.flat[i])
        side = _mp_side(fmp, xi, mi, dps)
        if side == 0:
            ties += 1
            side = -1 if ki % 2 == 0 else 1  # to the even neighbour (lo = k u)
        val = (ki + (1 if side > 0 else 0)) * ui
        if abs(val) > max_finite(f):
            val = np.copysign(np.inf, val)
        if val == 0.0:
            val = np.copysign(0.0, mi)
        flat_out[i] = val
    out = flat_out.reshape(out.shape)
    if return_stats:
        return out, {"mpmath": int(idx.size), "ties": ties}
    return out


# ---------------------------------------------------------------- ulp tables by region

REGIONS = (
    ("x < -3", lambda x: x < -3),
    ("-3 <= x < 0", lambda x: (x >= -3) & (x < 0)),
    ("x >= 0", lambda x: x >= 0),
)


def region_table(x, outputs: dict, exact_rounded, fmt: str | Format) -> list[dict]:
    """Per implementation and input region: max ulp error and % correctly rounded.

    ``x``: the inputs (float64 values of ``fmt``); ``outputs``: name -> results (float64 values
    of ``fmt``); ``exact_rounded``: the correctly rounded exact values. Only finite inputs with
    non-NaN results count.
    """
    f = get_format(fmt)
    x = np.asarray(x, F64)
    ref = np.asarray(exact_rounded, F64)
    rows = []
    for name, got in outputs.items():
        got = np.asarray(got, F64)
        for label, region in REGIONS:
            m = np.isfinite(x) & region(x) & ~np.isnan(got) & ~np.isnan(ref)
            d = ulp_distance(got[m], ref[m], f)
            worst = int(d.argmax()) if d.size else None
            rows.append(
                {
                    "impl": name,
                    "format": f.name,
                    "region": label,
                    "count": int(m.sum()),
                    "max_ulp": int(d.max()) if d.size else 0,
                    "argmax_x": float(x[m][worst]) if d.size else float("nan"),
                    "pct_correctly_rounded": float(100.0 * np.mean(d == 0)) if d.size else 100.0,
                    "mean_ulp": float(d.mean()) if d.size else 0.0,
                }
            )
    return rows


def format_table(rows: list[dict], title: str = "") -> str:
    """A plain-text table of ``region_table`` rows."""
    head = f"{'format':9s} {'implementation':26s} {'region':12s} {'inputs':>7s} {'max ulp':>8s}"
    head += f" {'% correctly rounded':>20s} {'mean ulp':>9s}  worst x"
    lines = ([title] if title else []) + [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['format']:9s} {r['impl']:26s} {r['region']:12s} {r['count']:7d} "
            f"{r['max_ulp']:8d} {r['pct_correctly_rounded']:20.2f} {r['mean_ulp']:9.4f}  "
            f"{r['argmax_x']:.6g}"
        )
    return "\n".join(lines)


def f32_hex(v: float) -> str:
    """float32 value as a C hex-float literal body, e.g. '0x1.988454p-3' (no suffix)."""
    v = float(F32(v))
    if v == 0.0:
        return "-0x0p+0" if np.signbit(v) else "0x0p+0"
    mant, exp = float.hex(v).split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"
