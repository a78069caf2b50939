"""The ``exp2`` op's programs: 2^x in float32 arithmetic, written as the kernels run it
(family_eval.h's ``exp2_eval``), replayed here bit for bit, fitted and measured; the specs
``data/specs/exp2/{accurate,paper}.json`` are written by ``python -m turbogelu fit --all``
(``make fit``), which runs this module's fit (``python -m turbogelu.approx.exp2_programs
[--tier paper] --out FILE`` writes it elsewhere).

The program (every float operation rounded once to float32; ``family_tails``' reduction
and its split 2^n, over the whole float32 range instead of the negative tail only):

1. xc = min(max(x, LO), HI), LO = -151, HI = 129, with NaN passing both (the tg_clamp_*
   primitives): below -150 every result rounds to +0 and at 128 and above to inf, so the
   window only makes -inf and +inf finite (2^-151 -> +0, 2^129 -> inf) and keeps n small.
2. k = fl(xc + 1.5 2^23) (``family_tails.MAGIC``): rint(xc) (ties to even) in k's last bits;
   n = k - 1.5 2^23 and f = xc - n, both exact. Form "Exp2Nearest" (the accurate tier):
   |f| <= 1/2. Form "Exp2Floor" (the paper tier): k = fl(fl(xc - 1/2) + 1.5 2^23), so n is
   floor(x) up to ties and f runs over [0, 1] (f = 1 at some integers: the paper's D2 has
   p(1) = 2 exactly, so the result is the same), as the paper's Table 8 fits 2^f on [0, 1].
3. p = P(f) by Horner with FMAs, p(0) = 1 exactly.
4. 2^n in two factors from k's bits by integer operations: i = bits(k) = bits(1.5 2^23) + n,
   h = i >> 1, 2^floor(n/2) = bits((h << 23) + (127 << 23)), 2^ceil(n/2) = bits(((i - h) <<
   23) + (127 << 23)); both halves lie in [-76, 65], normal floats. fl(p 2^floor(n/2)) is
   exact (p >= 0.7), and the last multiply rounds once: fl(p 2^n), subnormal results and
   overflow to inf included, correctly rounded from p.

float64 runs the same steps in double with the window [-1076, 1025], the magic 1.5 2^52 and
double's exponent field (family_eval.h); the coefficients stay these float32 values.

Tiers:
* ``accurate``: P of degree ``ACCURATE_DEGREE`` = 5 on [-1/2, 1/2], a relative minimax with
  p(0) = 1 (``family_tails.exp2_coefficients``: exp2.fit_minimax, float32 coefficients).
  Within 2 ulp of the correctly rounded 2^x over the whole float32 range, the lowest degree
  that holds (``degree_scan``, in the spec: degree 4 is 43 ulp off; 6 would be within 1 ulp,
  for one FMA more). For normal results the ulp error depends on f alone, and
  ``fraction_lattice`` holds every f of an input |x| >= 1/2: the scan is exhaustive there;
  |x| < 1/2 (f = x) is covered by the grid and a random sample of bit patterns.
* ``paper``: the paper's float32 exp2 (its Table 9 runs "D2 FP32" inside FlashAttention-4's
  softmax; FA4 D3 is FlashAttention's own and PWL2 the float16 packed one): D2 on [0, 1],
  p = 1 + f + a f (f - 1), the sampled relative minimax of ``exp2.table8`` (the lower max
  error of the two D2 rows, at the same cost), both endpoints exact in float32 (a is put on
  the 2^-24 grid so that c1 = 1 - a is exact and fl(fl(c2 + c1) + 1) = 2).

The backward programs (the family's Plain kind: grad * f'(x) from x): ``backward_direct``
is ln 2 times the forward's coefficients (float32), ``backward_matched`` the forward program's
own derivative P'(f) 2^n (df/dx = 1 between the integers). Autograd's default differentiates
from the saved result instead (turbogelu/ops.py).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from pathlib import Path

import mpmath
import numpy as np

from .. import _spec_names
from . import exp2, rounding, spec
from .family_tails import MAGIC, TailArith, exp2_coefficients
from .replay import poly

F32 = np.float32
F64 = np.float64
COMMAND = "python -m turbogelu.approx.exp2_programs"
TIERS = _spec_names.FAMILY_TIERS  # the table's (turbogelu/_table.py)
FORMS = {"accurate": "Exp2Nearest", "paper": "Exp2Floor"}
PARTS = ("forward", "backward_direct", "backward_matched")
LO, HI = -151.0, 129.0
ACCURATE_DEGREE = 5
ULP_BOUND = 2  # the accurate tier's float32 bound, in ulps of the correctly rounded result
FORMATS = ("bfloat16", "float16")
GRID_STEP = 2.0**-12
LN2 = math.log(2.0)
SPEC_DIR = spec.SPEC_DIR / spec.SCHEMAS["exp2"].folder


def _hex(v: float) -> str:
    return spec.f32_hex(float(v))


def _f32(values) -> list[float]:
    return [float(v) for v in rounding.round_to_format(np.asarray(values, F64), "float32")]


# ---------------------------------------------------------------- fits


def accurate_coefficients(degree: int = ACCURATE_DEGREE) -> list[float]:
    """2^f on [-1/2, 1/2], p(0) = 1, relative minimax, float32 (low order first)."""
    return list(exp2_coefficients(degree))


@functools.cache
def paper_coefficients() -> list[float]:
    """The paper's D2 (Table 8's sampled minimax row) in float32, both endpoints exact."""
    (a,) = exp2.fit_minimax(exp2.D2)
    a = round(float(a) * 2.0**24) / 2.0**24  # on the 2^-24 grid: 1 - a is exact in float32
    c = [1.0, 1.0 - a, a]
    assert _f32(c) == c
    return c


def derivative_programs(c: list[float]) -> tuple[list[float], list[float]]:
    """(direct, matched): ln 2 * c in float32, and P' (k c_k, exact in float32 for these)."""
    direct = _f32(np.asarray(c, F64) * LN2)
    matched = _f32([k * c[k] for k in range(1, len(c))])
    return direct, matched


# ---------------------------------------------------------------- the replay


def replay(coeffs, x, form: str = "Exp2Nearest") -> np.ndarray:
    """The float32 result of the program (module docstring) at float32 inputs ``x``."""
    ar = TailArith()
    with np.errstate(all="ignore"):
        x = np.asarray(x, F32).astype(F64)
        xc = np.where(x < LO, LO, x)  # NaN compares false and stays, as tg_clamp_below
        xc = np.where(xc > HI, HI, xc)
        t = ar.add(xc, -0.5) if form == "Exp2Floor" else xc
        k = ar.add(t, MAGIC)
        n = ar.add(k, -MAGIC)
        f = ar.fma(n, -1.0, xc)
        p = poly(ar, f, [float(c) for c in coeffs])
        nn = np.where(np.isfinite(n), n, 0.0).astype(np.int64)
        lo = np.ldexp(1.0, nn // 2)  # 2^floor(n/2)
        hi = np.ldexp(1.0, nn - nn // 2)  # 2^ceil(n/2)
        return ar.mul(ar.mul(p, lo), hi).astype(F32)


def replay_tier(x, tier: str = "accurate", part: str = "forward", doc: dict | None = None):
    """The shipped program ``part`` of ``tier`` (data/specs/exp2/<tier>.json) at x; the
    backward parts give f'(x) (the op multiplies it by grad)."""
    doc = load(tier) if doc is None else doc
    return replay(coefficients(doc, part), x, doc["form"])


# ---------------------------------------------------------------- the reference


def _exp2_mp(v: float, dps: int):
    with mpmath.workdps(dps):
        return mpmath.power(2, mpmath.mpf(v))


def correctly_rounded(x, fmt: str = "float32", scale: float = 1.0) -> np.ndarray:
    """scale * 2^x correctly rounded to ``fmt`` (float64 decides except near a midpoint,
    where mpmath does: ``rounding.correctly_rounded``); scale 1 or ln 2."""
    if scale == 1.0:
        fn = (np.exp2, _exp2_mp)
    else:
        fn = (lambda v: scale * np.exp2(v), lambda v, dps: mpmath.log(2) * _exp2_mp(v, dps))
    return rounding.correctly_rounded(np.asarray(x, F64), fmt, fn)


def float32_grid() -> np.ndarray:
    """x = k 2^-12 over [-152, 130] (both ends beyond the window), every float32 within 64
    steps of the boundaries (+-0, -126, -149, -150, 128, the integers around them), tiny
    magnitudes 2^-149 .. 2^-12 of both signs, and the specials +-inf."""
    dense = np.arange(-152 * 4096, 130 * 4096 + 1, dtype=F64) * GRID_STEP
    edges = []
    for e in (0.0, -125.0, -126.0, -127.0, -148.0, -149.0, -150.0, -151.0, 127.0, 128.0, 129.0):
        b = np.asarray(e, F32).view(np.int32)
        near = np.arange(-64, 65, dtype=np.int64)
        if e == 0.0:
            edges.append(near[near >= 0].astype(np.int32).view(F32))  # +0 and up
            edges.append((near[near > 0] | 0x80000000).astype(np.uint32).view(F32))  # -0 down
            continue
        edges.append((np.int64(b) + near).astype(np.int32).view(F32))
    tiny = np.exp2(np.arange(-149, -11, dtype=F64))
    # 2^20 random bit patterns of |x| <= 152 (seeded): mostly small magnitudes, where f = x
    # itself is finer than the grid's.
    top = int(np.asarray(152.0, F32).view(np.int32))
    bits = np.random.default_rng(2).integers(0, top + 1, 1 << 20).astype(np.int32)
    sample = bits.view(F32).astype(F64) * np.where(np.arange(bits.size) % 2 == 0, 1.0, -1.0)
    parts = [
        dense,
        *(e.astype(F64) for e in edges),
        tiny,
        -tiny,
        sample,
        np.array([np.inf, -np.inf]),
    ]
    return np.unique(np.concatenate(parts).astype(F32))


def sixteen_bit_inputs(fmt: str) -> np.ndarray:
    """Every non-NaN value of ``fmt`` (infinities included), as float32."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    if fmt == "float16":
        x = bits.view(np.float16).astype(F32)
    else:
        x = (bits.astype(np.uint32) << 16).view(F32)
    return x[~np.isnan(x)]


# ---------------------------------------------------------------- measurements


def _ulps(got, want, fmt: str) -> np.ndarray:
    return rounding.ulp_distance(np.asarray(got, F64), np.asarray(want, F64), fmt)


def float32_errors(coeffs, form: str, scale: float = 1.0) -> dict:
    """On ``float32_grid``: ulps to scale * 2^x correctly rounded (max, counts), where the
    result overflows / is subnormal, and the relative error beyond the rounding."""
    x = float32_grid()
    got = replay(coeffs, x, form).astype(F64)
    want = correctly_rounded(x, "float32", scale)
    u = _ulps(got, want, "float32")
    i = int(np.argmax(u))
    sub = (want != 0) & (np.abs(want) < 2.0**-126)
    big = np.isinf(got) != np.isinf(want)
    with np.errstate(all="ignore"):
        exact = scale * np.exp2(x.astype(F64))
        rel = np.where(
            np.isfinite(want) & np.isfinite(got) & (want >= 2.0**-126), np.abs(got / exact - 1), 0.0
        )
    return {
        "inputs": int(x.size),
        "max_ulp": int(u.max()),
        "argmax": float(x[i]),
        "counts_by_ulp": {
            **{str(k): int((u == k).sum()) for k in range(ULP_BOUND + 1)},
            f"over_{ULP_BOUND}": int((u > ULP_BOUND).sum()),
        },
        "max_ulp_subnormal_results": int(u[sub].max()) if sub.any() else None,
        "subnormal_results": int(sub.sum()),
        "overflow_mismatches": int(big.sum()),
        "first_inf_input": float(x[np.isinf(got) & (x > 0)].min()),
        "max_rel_normal": float(rel.max()),
        "grid": "x = k 2^-12 on [-152, 130], every float32 within 64 steps of 0, -125, -126, "
        "-127, -148, -149, -150, -151, 127, 128, 129, +-2^-149..2^-12, 2^20 random bit "
        "patterns of |x| <= 152 and +-inf; ulps of float32 to the correctly rounded value "
        "(mpmath near midpoints)",
    }


def sixteen_bit_errors(coeffs, form: str, fmt: str) -> dict:
    """Every ``fmt`` input: the float32 result rounded to ``fmt`` (as the op stores it) against
    2^x correctly rounded to ``fmt``."""
    x = sixteen_bit_inputs(fmt)
    got = rounding.round_to_format(replay(coeffs, x, form).astype(F64), fmt)
    want = correctly_rounded(x, fmt)
    u = _ulps(got, want, fmt)
    return {
        "inputs": int(x.size),
        "max_ulp": int(u.max()),
        "correctly_rounded": int((u == 0).sum()),
        "within_1_ulp": int((u <= 1).sum()),
        "over_1_ulp": int((u > 1).sum()),
        "argmax": float(x[int(np.argmax(u))]),
    }


def measure(coeffs, form: str) -> dict:
    return {
        "float32": float32_errors(coeffs, form),
        **{fmt: sixteen_bit_errors(coeffs, form, fmt) for fmt in FORMATS},
    }


def fraction_lattice() -> np.ndarray:
    """f = k 2^-24, |f| <= 1/2: every fraction of an input |x| >= 1/2 (its ulp is >= 2^-24).
    For normal results fl(p 2^n) = p 2^n and the correctly rounded 2^(n + f) is 2^n times that
    of 2^f, so the ulp error depends on f alone and this set covers every such input."""
    return (np.arange(-(2**23), 2**23 + 1, dtype=F64) * 2.0**-24).astype(F32)


def degree_scan(degrees=(4, 5, 6)) -> list[dict]:
    """The accurate tier's max ulp at each degree over ``fraction_lattice`` (normal results)."""
    f = fraction_lattice()
    want = correctly_rounded(f)
    rows = []
    for d in degrees:
        u = _ulps(replay(accurate_coefficients(d), f).astype(F64), want, "float32")
        rows.append(
            {
                "degree": d,
                "max_ulp": int(u.max()),
                "at_max": int((u == u.max()).sum()),
                "points": int(f.size),
                "holds": int(u.max()) <= ULP_BOUND,
            }
        )
    return rows


# ---------------------------------------------------------------- specs


def _part(c: list[float], fit: str, errors: dict) -> dict:
    return {
        "degree": len(c) - 1,
        "coefficients": [_hex(v) for v in c],
        "fit": fit,
        "errors": errors,
    }


def build_spec(tier: str = "accurate") -> dict:
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
    form = FORMS[tier]
    if tier == "accurate":
        c = accurate_coefficients()
        fit = (
            f"relative minimax of 2^f on [-1/2, 1/2] with p(0) = 1 (family_tails."
            f"exp2_coefficients({ACCURATE_DEGREE})), float32 coefficients"
        )
    else:
        c = paper_coefficients()
        fit = (
            "the paper's D2 (Table 8, sampled minimax of the relative error): 1 + f + a f "
            "(f - 1) on [0, 1], a on the 2^-24 grid, both endpoints exact in float32"
        )
    direct, matched = derivative_programs(c)
    doc = {
        **spec.envelope("exp2", "exp2", tier, spec.FIT_ALL, PARTS, "direct"),
        "form": form,
        "window": [LO, HI],
        "magic": float.hex(MAGIC),
        "forward": _part(c, fit, measure(c, form)),
        "backward_direct": _part(
            direct,
            "ln 2 times the forward's coefficients, float32",
            {"float32": float32_errors(direct, form, LN2)},
        ),
        "backward_matched": _part(
            matched,
            "the forward program's derivative P'(f) 2^n",
            {"float32": float32_errors(matched, form, LN2)},
        ),
    }
    if tier == "accurate":
        doc["degree_scan"] = degree_scan()
        doc["holds_tier"] = doc["forward"]["errors"]["float32"]["max_ulp"] <= ULP_BOUND
    return doc


def spec_file(tier: str, root: str | Path | None = None) -> Path:
    return (SPEC_DIR if root is None else Path(root)) / f"{tier}.json"


def load(tier: str = "accurate", root: str | Path | None = None) -> dict:
    doc = spec.load(spec_file(tier, root), "exp2")
    if doc["tier"] != tier:
        raise ValueError(f"{spec_file(tier, root)} holds the {doc['tier']!r} tier, not {tier!r}")
    return doc


def coefficients(doc: dict, part: str = "forward") -> list[float]:
    return [float.fromhex(h) for h in doc[part]["coefficients"]]


def main(argv=None) -> int:

    ap = argparse.ArgumentParser(prog=COMMAND, description="Fit and measure exp2's programs.")
    ap.add_argument("--tier", choices=TIERS, default="accurate")
    ap.add_argument("--out", type=Path, help="write here instead of data/specs/exp2/<tier>.json")
    ap.add_argument(
        "--force", action="store_true", help="overwrite a differing committed spec (fit --all only)"
    )
    args = ap.parse_args(argv)
    text = spec.dumps(build_spec(args.tier), "exp2")
    out = args.out if args.out is not None else spec_file(args.tier)
    return spec.write_reported(out, text, force=args.force)


if __name__ == "__main__":
    sys.exit(main())
