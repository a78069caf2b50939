"""The activation family's paper tier in packed bfloat16 arithmetic: the lab's replay of the
opt-in CUDA path (kernels/cuda/bf16x2.cuh, family_kernels.cu's packed_family_kernel), which
runs the paper's Table 2 programs (``data/specs/<function>/paper.json``) two lanes at a time
in ``__nv_bfloat162`` arithmetic, as the paper means them to run.

Which ops: all five, forward and backward (sigmoid, tanh, silu, softcap = tanh's programs on
x / cap, swiglu = silu's gated): the kernels are the family's element functions
(``family_eval.h``) over a packed type, so every op of ``TG_FAMILY_OPS`` gets the path in its
paper tier. The paper itself times the forward of sigmoid, tanh and SiLU in 16-bit packed
form; softcap and swiglu are the same programs with one or two more packed multiplies.

The semantics, where float32 and bfloat16 arithmetic differ (each as the kernel does it):

* Inputs (x, grad, b) are bfloat16; the path is for bfloat16 data only.
* Constants: every value the kernel is given in float32 (the programs' clamp, scale
  fl32(2 / L), asymptotes and coefficients in family_coeffs.h; softcap's cap fl32(cap) and
  inv fl32(1 / fl32(cap))) is rounded once to bfloat16 to nearest even (``kernel_program``,
  ``cap_constants``). The paper's fitted coefficients and its forward scales are bfloat16
  values already; the matched derivatives' float32 coefficients are rounded, so the packed
  ``matched`` backward is close to, no longer exactly, the derivative of the packed forward.
* The window is ``|x| <= bf16(L)``, the clamp rounded to nearest: it may reach past L by up to
  half a bfloat16 ulp (tanh: 2.78 -> 2.78125, so x = +-2.78125 takes the polynomial, a hair
  beyond its fit interval's end 2.84 in z: measured below with everything else).
* Every operation is rounded once to bfloat16 (``replay.Arith``, the arithmetic
  ``packed.py``'s replay of GELU's packed path uses): family_eval.h's sequence
  u = |x|, v = u or fl(u*u), z = fma(v, scale, -1), Horner with FMAs, then the form's
  reconstruction (fma(x, p, 1/2); x * p; x * fma(x, p, 1/2); fl(x * 1/2) + p; p), and the
  op's multiplies (grad * f'; cap * f(q) with q = x * inv; f(a) * b; (grad * b) * f'(a)), each
  a bfloat16 result, where the float32 tier rounds once at the end.
* Beyond the window the asymptote (exact in bfloat16: 0, +-1, or x / -0.0 for SiLU's form);
  NaN fails the window test and stays NaN. bfloat16 subnormals are kept, inputs and results
  (the bf16x2 instructions have no flush-to-zero form in PTX; that the hardware keeps them is
  not yet seen on a GPU: tests/test_cuda.py's comparison covers every subnormal input).

``report()`` measures every program over every finite bfloat16 input against the exact
function (correctly rounded by ``report.reference_table``; softcap: float64 c tanh(x / c)),
beside the float32-arithmetic paper tier rounded to bfloat16; ``BOUNDS`` holds the measured
max |error| of the packed path that tests/test_packed_family.py asserts.

    python -m turbogelu.approx.packed_family          # the table (about a minute)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from .. import _table
from . import codegen, family_programs, report, rounding
from .polyspec import PolySpec, replay
from .replay import Arith, poly

FMT = "bfloat16"
# op -> the function whose programs it runs; GELU's rows too (their paper tier: CUDA's packed
# path runs it as the family's, called gelu(x, approximate, tier="paper"))
OPS = {**family_programs.OPS, **{o.name: o.program for o in _table.GELU if "paper" in o.tiers}}
# The functions with a paper tier, which is what the packed path runs (softplus has none).
FUNCTIONS = tuple(f for f in family_programs.FUNCTIONS if "paper" in _table.program_tiers(f))
PARTS = ("forward", "backward_direct", "backward_matched")
CAPS = (2.5, 50.0)  # softcap's caps measured: a small one, and a logit cap of LLMs

# The measured max |error| of the packed path over every finite bfloat16 input (``report``),
# rounded up in the second significant digit: tests/test_packed_family.py holds the replay
# to them. (function or "softcap@cap", part) -> bound.
BOUNDS = {
    ("sigmoid", "forward"): 8.8e-3,
    ("sigmoid", "backward_direct"): 4.8e-3,
    ("sigmoid", "backward_matched"): 3.0e-2,
    ("tanh", "forward"): 1.1e-2,
    ("tanh", "backward_direct"): 9.4e-2,
    ("tanh", "backward_matched"): 9.4e-2,
    ("silu", "forward"): 3.8e-2,
    ("silu", "backward_direct"): 0.24,
    ("silu", "backward_matched"): 0.24,
    ("softcap@2.5", "forward"): 2.9e-2,
    ("softcap@50", "forward"): 0.63,
}


def _bf16(v) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return rounding.round_to(np.asarray(v, np.float64), FMT)


def _bf16_of_f32(v, fmt: str = FMT) -> float:
    """A float32 kernel constant as tg_splat gives it to the packed path: fl32, then bf16
    (fmt="float32": the float32 kernels' constant itself)."""
    return float(rounding.round_to(np.float64(np.float32(v)), fmt))


@dataclass(frozen=True)
class KernelProgram:
    """One program as the packed kernel holds it: family_eval.h's Form, whether P's variable
    is made from x^2, and its constants rounded to bfloat16."""

    form: str
    in_y: bool
    clamp: float
    scale: float
    below: float
    above: float
    coefficients: tuple[float, ...]


def kernel_program(ps: PolySpec, fmt: str = FMT) -> KernelProgram:
    """ps as the packed kernel holds it; fmt="float32": as the float32 kernels do (with
    ``family_eval`` in ``Arith("float32")`` that is the float32 tier, bit for bit: how the
    tests check that this sequence is family_eval.h's)."""
    form, in_y = codegen.family_form(ps)
    below, above = (float(s.rstrip("f")) for s in codegen._ASYMPTOTES[ps.tgt.asymptote_kind])
    return KernelProgram(
        form=form,
        in_y=in_y,
        clamp=_bf16_of_f32(ps.clamp, fmt),
        scale=_bf16_of_f32(ps.scale, fmt),
        below=below,
        above=above,
        coefficients=tuple(_bf16_of_f32(c, fmt) for c in ps.coefficients),
    )


def family_eval(k: KernelProgram, x: np.ndarray, ar: Arith | None = None) -> np.ndarray:
    """family_eval<Form, N, Y>(x, program) in packed bfloat16 arithmetic, for bfloat16 x
    (float64 arrays); the bfloat16 results as float64. (Leading zero coefficients, which
    family_coeffs.h pads a shorter derivative with, pass through Horner exactly: left out.)"""
    ar = ar if ar is not None else Arith(FMT)
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        u = np.abs(x)
        v = ar.mul(u, u) if k.in_y else u
        z = ar.fma(v, k.scale, -1.0)
        p = poly(ar, z, list(k.coefficients))
        if k.form == "HalfPlusOdd":
            r = ar.fma(x, p, 0.5)
        elif k.form == "Odd":
            r = ar.mul(x, p)
        elif k.form == "XHalfPlusEven":
            r = ar.mul(x, ar.fma(x, p, 0.5))
        elif k.form == "XHalfPlus":
            r = ar.add(ar.mul(x, 0.5), p)
        else:
            r = p
        if k.form in ("XHalfPlusEven", "XHalfPlus"):
            tail = np.where(x > 0, x, -0.0)
        else:
            tail = np.where(x > 0, k.above, k.below)
        return np.where(u > k.clamp, tail, r)


# ---------------------------------------------------------------- the ops


def cap_constants(cap: float) -> tuple[float, float]:
    """softcap's (cap, 1/cap) as the packed kernel holds them: the float32 pair of the float32
    kernels (``family_programs.cap_constants``), each rounded to bfloat16."""
    c, inv = family_programs.cap_constants(cap)
    return _bf16_of_f32(c), _bf16_of_f32(inv)


def _doc(op: str, doc: dict | None) -> dict:
    if op not in OPS:
        raise ValueError(f"op must be one of {tuple(OPS)}, got {op!r}")
    return doc if doc is not None else family_programs.load(OPS[op], tier="paper")


def forward(op: str, *inputs, cap: float | None = None, doc: dict | None = None) -> np.ndarray:
    """The packed path's forward of op on bfloat16 inputs (x; x with cap; a, b), as float64."""
    doc = _doc(op, doc)
    f = kernel_program(PolySpec.from_dict(doc["forward"]))
    ar = Arith(FMT)
    args = [_bf16(v) for v in inputs]
    with np.errstate(all="ignore"):
        if op == "swiglu":
            a, b = args
            return ar.mul(family_eval(f, a, ar), b)
        (x,) = args
        if op == "softcap":
            c, inv = cap_constants(cap)
            return ar.mul(c, family_eval(f, ar.mul(x, inv), ar))
        return family_eval(f, x, ar)


def backward(
    op: str,
    grad,
    *inputs,
    cap: float | None = None,
    backward: str = "default",
    doc: dict | None = None,
):
    """The packed path's backward: grad * f'(x) (softcap: f'(x * inv)); swiglu the pair
    ((grad * b) * f'(a), grad * f(a)), each product rounded to bfloat16."""
    doc = _doc(op, doc)
    d = kernel_program(family_programs._derivative(doc, backward))
    ar = Arith(FMT)
    g = _bf16(grad)
    args = [_bf16(v) for v in inputs]
    with np.errstate(all="ignore"):
        if op == "swiglu":
            a, b = args
            f = kernel_program(PolySpec.from_dict(doc["forward"]))
            return ar.mul(ar.mul(g, b), family_eval(d, a, ar)), ar.mul(g, family_eval(f, a, ar))
        (x,) = args
        if op == "softcap":
            x = ar.mul(x, cap_constants(cap)[1])
        return ar.mul(g, family_eval(d, x, ar))


# ---------------------------------------------------------------- errors


def finite_inputs() -> np.ndarray:
    """Every finite bfloat16 value, as float64 (packed.py's, without importing its fits)."""
    bits = np.arange(1 << 16, dtype=np.uint32) << 16
    x = bits.view(np.float32)
    return x[np.isfinite(x)].astype(np.float64)


def _stats(got: np.ndarray, exact: np.ndarray, want: np.ndarray, window: np.ndarray) -> dict:
    """max |got - exact|, and the ulps of got from want (the exact value correctly rounded):
    over every input, and inside the window (|x| <= clamp: the paper's programs return the
    asymptote beyond it, thousands of ulps from tiny exact values in the tails)."""
    ok = ~np.isnan(want) & ~np.isnan(got)
    ulps = rounding.ulp_distance(got[ok], want[ok], FMT)
    return {
        "max_abs": float(np.max(np.abs(got[ok] - exact[ok]))),
        "max_ulp": int(ulps.max()),
        "window_max_ulp": int(ulps[window[ok]].max()),
        "pct_correctly_rounded": 100.0 * float(np.mean(ulps == 0)),
        "within_1_ulp": int((ulps <= 1).sum()),
        "inputs": int(ok.sum()),
    }


def program_errors(function: str, part: str, doc: dict | None = None) -> dict:
    """The packed replay and the float32 tier (its float32 result rounded to bfloat16) of one
    program of ``function``'s paper tier, over every finite bfloat16 input, against the exact
    function correctly rounded (report.reference_table: mpmath where float64 is too close
    to call)."""
    doc = doc if doc is not None else family_programs.load(function, tier="paper")
    ps = PolySpec.from_dict(doc[part])
    k = kernel_program(ps)
    x32, want, exact = report.reference_table(ps.target, FMT)
    x = x32.astype(np.float64)
    packed = family_eval(k, x)
    float32 = _bf16(replay(ps, x32).astype(np.float64))
    window = np.abs(x) <= np.float32(ps.clamp)
    return {
        "packed": _stats(packed, exact, want, window),
        "float32": _stats(float32, exact, want, window),
    }


def softcap_errors(cap: float, doc: dict | None = None) -> dict:
    """softcap's forward at ``cap`` over every finite bfloat16 input against float64
    cap * tanh(x / cap) (its bfloat16 rounding for the ulps), packed and float32 tier."""
    x = finite_inputs()
    exact = cap * np.tanh(x / cap)
    want = _bf16(exact)
    doc = doc if doc is not None else family_programs.load("tanh", tier="paper")
    f32 = family_programs.replay_forward("softcap", x, cap=cap, doc=doc)
    window = np.abs(x) <= cap * PolySpec.from_dict(doc["forward"]).clamp
    return {
        "packed": _stats(forward("softcap", x, cap=cap, doc=doc), exact, want, window),
        "float32": _stats(_bf16(f32.astype(np.float64)), exact, want, window),
    }


def report_rows() -> list[dict]:
    """Every program of the paper tier, and softcap's forward at each of CAPS: packed and
    float32-tier errors, and the packed bound (``BOUNDS``)."""
    rows = []
    for fn in FUNCTIONS:
        doc = family_programs.load(fn, tier="paper")
        for part in PARTS:
            rows.append({"function": fn, "part": part, **program_errors(fn, part, doc)})
    tanh = family_programs.load("tanh", tier="paper")
    for cap in CAPS:
        errors = softcap_errors(cap, tanh)
        rows.append({"function": f"softcap@{cap:g}", "part": "forward", **errors})
    for r in rows:
        r["bound"] = BOUNDS[(r["function"], r["part"])]
    return rows


def render(rows: list[dict]) -> str:
    lines = [
        "| function | part | packed max abs | packed max ulp (window) | packed % exact"
        " | float32 max abs | float32 max ulp (window) | float32 % exact | bound |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        p, f = r["packed"], r["float32"]
        lines.append(
            f"| {r['function']} | {r['part']} | {p['max_abs']:.4g} | {p['max_ulp']}"
            f" ({p['window_max_ulp']}) | {p['pct_correctly_rounded']:.1f} | {f['max_abs']:.4g}"
            f" | {f['max_ulp']} ({f['window_max_ulp']}) | {f['pct_correctly_rounded']:.1f}"
            f" | {r['bound']:.2g} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m turbogelu.approx.packed_family",
        description="Errors of the paper tier's packed bfloat16 path (every bfloat16 input).",
    )
    p.parse_args(argv)
    rows = report_rows()
    print(render(rows))
    over = [r for r in rows if r["packed"]["max_abs"] > r["bound"]]
    for r in over:
        print(f"{r['function']} {r['part']}: above its bound {r['bound']}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
