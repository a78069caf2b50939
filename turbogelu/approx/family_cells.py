"""Table-driven programs ("cells") for sigmoid, tanh and SiLU: a cubic in each of 32 cells of |x|.

The family's polynomials spend 11 to 13 multiply-adds an element, and on
16-bit data at 1M elements that arithmetic, not memory, bounds their speed (the family
benchmark: 2.9-3.1x a copy). GELU's cells program (``cells.py``) showed the way out: short
polynomials per cell, their coefficients looked up by two-table permutes held in registers.
These functions are not GELU's shape (their tails decay like e^-x, so the cells must reach
|x| ~ 15, not 5), so the cells cover u = |x| and the symmetry gives the sign back::

    u  = min(|x|, clamp)                  # NaN stays NaN
    k  = bits(fma(u, scale, 1.5*2^23)) & 31    # rint(u*scale): cell k covers [k-1/2, k+1/2]/scale
    p  = ((c3[k] u + c2[k]) u + c1[k]) u + c0[k]          (fused multiply-adds)

and then, by the function's form (family_eval.h's CellForm):

    HalfPlusOdd    1/2 + copysign(p, x)            sigmoid (p ~ sigmoid(u) - 1/2), SiLU'
    XHalfPlusOdd   max(x, -clamp) (1/2 + copysign(p, x))   SiLU = x sigmoid(x)
    Odd            copysign(p, x)                  tanh (p ~ tanh(u)), softcap through it
    Even           p                               sigmoid', tanh' (and their matched)

Cells 0..30 hold the fits (cell 0 is the half cell [0, 1/(2 scale)]; in the odd forms its
constant term is fixed at 0, so f(+-0) is exactly 1/2 or +-0, x sigmoid(x) keeps -0.0 and
tanh the subnormals); cell 31 is a constant: 1/2 in the half-plus-odd forms (1/2 +- 1/2 is
exactly 1 or 0: sigmoid(+-inf), SiLU's x and -0.0 beyond R), 1 in tanh's (+-1), 0 in the even
ones. R = 30.5/scale is where the fits end and clamp = 31/scale, the centre of cell 31. Each
cell's cubic is the weighted minimax fit (an LP on 513 points of the cell widened by 1 % each
side), weight 1, or max(u, 1/4) for SiLU's forward (the kernel multiplies by x), or 1/tanh(u)
for tanh's (relative: every float16 input within 1 ulp, the smallest included), rounded to
float32. The matched derivatives are the forward's programs differentiated cell by cell:
sigmoid' and tanh' = P'(u) (Even), SiLU' = 1/2 + sign(x) (P(u) + u P'(u)) (HalfPlusOdd). The
replay below is bit-exact with the CPU kernels (tests).

    python -m turbogelu.approx.family_cells --check    # refit and compare with the committed
    python -m turbogelu.approx.family_cells --out DIR  # refit and write the specs to DIR

(the committed specs, data/specs/cells/<fn>.json, are written only by ``python -m turbogelu
fit --all``, ``make fit``, which runs this fit).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from . import replay
from . import spec as specmod
from .cells import CELLS, DEGREE, MAGIC, PAD, POINTS, cell_index, cli, minimax_lp, part_values

F32 = np.float32
KIND = "family_cells"
COMMAND = specmod.SCHEMAS[KIND].command
SPEC_DIR = specmod.SPEC_DIR / specmod.SCHEMAS[KIND].folder
PARTS = specmod.PARTS  # forward, backward_direct, backward_matched
LAST = CELLS - 1  # the constant cell

# Per function: where the fits end (R: the tail's error, 1 - sigmoid(R) = 8.3e-7,
# 1 - tanh(R) = 1.7e-6 and R e^-R = 4.6e-6, is below the cells' own), and each part's form.
DESIGN = {
    "sigmoid": {"tails_from": 14.0, "forms": ("HalfPlusOdd", "Even", "Even")},
    "tanh": {"tails_from": 7.0, "forms": ("Odd", "Even", "Even")},
    "silu": {"tails_from": 15.0, "forms": ("XHalfPlusOdd", "HalfPlusOdd", "HalfPlusOdd")},
}
FUNCTIONS = tuple(DESIGN)


def _sigmoid(x):
    return 0.5 + 0.5 * np.tanh(np.asarray(x, np.float64) / 2)


def _silu_grad(x):
    x = np.asarray(x, np.float64)
    s = _sigmoid(x)
    return s * (1 + x * (1 - s))


def exact(fn: str, part: str, x) -> np.ndarray:
    """The function (forward) or its derivative (the backward parts), float64."""
    x = np.asarray(x, np.float64)
    if fn == "sigmoid":
        if part == "forward":
            return _sigmoid(x)
        s = _sigmoid(x)
        return s * (1 - s)
    if fn == "tanh":
        t = np.tanh(x)
        return t if part == "forward" else 1 - t * t
    return x * _sigmoid(x) if part == "forward" else _silu_grad(x)


def _fit_target(fn: str, part: str):
    """(p's target on u >= 0, weight, constant of the last cell) of a fitted part."""
    one = np.ones_like
    if fn == "tanh" and part == "forward":  # relative near 0: every 16-bit input within 1 ulp
        return np.tanh, lambda u: 1 / np.tanh(np.maximum(u, 1e-4)), 1.0
    if fn == "tanh":
        return lambda u: exact("tanh", "backward", u), one, 0.0
    if fn == "sigmoid" and part == "forward":
        return lambda u: 0.5 * np.tanh(u / 2), one, 0.5
    if fn == "sigmoid":
        return lambda u: exact("sigmoid", "backward", u), one, 0.0
    if part == "forward":
        return lambda u: 0.5 * np.tanh(u / 2), lambda u: np.maximum(u, 0.25), 0.5
    return lambda u: _silu_grad(u) - 0.5, one, 0.5


def design(fn: str) -> dict:
    """scale, clamp and offset (float32) of a function's cells."""
    scale = F32((LAST - 0.5) / DESIGN[fn]["tails_from"])  # s(R) = 30.5: the top of cell 30
    clamp = F32(LAST / float(scale))  # the centre of cell 31
    return {"scale": scale, "clamp": clamp, "offset": F32(MAGIC)}


def _minimax(xs, ys, w, cols) -> np.ndarray:
    """Coefficients of u^j for j in cols (the rest 0) minimising max w |p(u) - y| (an LP)."""
    v = np.vander(xs, DEGREE + 1, increasing=True)[:, cols] * w[:, None]
    c = np.zeros(DEGREE + 1)
    c[cols] = minimax_lp(v, w * ys)[0]
    return c


def fit_table(fn: str, part: str) -> np.ndarray:
    """(DEGREE + 1, CELLS) float32: row j holds the coefficient of u^j of every cell."""
    scale = float(design(fn)["scale"])
    target, weight, last = _fit_target(fn, part)
    odd = DESIGN[fn]["forms"][PARTS.index(part)] != "Even"
    table = np.zeros((DEGREE + 1, CELLS), F32)
    table[0, LAST] = last
    for k in range(LAST):
        lo, hi = max((k - 0.5) / scale, 0.0), (k + 0.5) / scale
        pad = PAD * (hi - lo)
        xs = np.linspace(max(lo - pad, 0.0), hi + pad, POINTS)
        cols = [1, 2, 3] if odd and k == 0 else [0, 1, 2, 3]
        table[:, k] = _minimax(xs, target(xs), weight(xs), cols).astype(F32)
    return table


def matched_table(fn: str, forward: np.ndarray) -> np.ndarray:
    """The forward program's derivative, cell by cell, rounded to float32: P'(u) (sigmoid),
    P(u) + u P'(u) (SiLU)."""
    f = forward.astype(np.float64)
    out = np.zeros_like(f)
    if fn in ("sigmoid", "tanh"):
        out[:DEGREE] = f[1:] * np.arange(1, DEGREE + 1)[:, None]
    else:
        out = f * np.arange(1, DEGREE + 2)[:, None]
    return out.astype(F32)


# ---------------------------------------------------------------- replay (bit-exact)


def _u(x, clamp):
    u = np.abs(np.asarray(x, F32))
    return np.where(u > F32(clamp), F32(clamp), u).astype(F32)  # NaN compares false, stays


def _p32(x, part: dict) -> np.ndarray:
    u = _u(x, part["clamp"])
    k = cell_index(u, part["scale"], part["offset"])
    return replay.poly32(u, [row[k] for row in np.asarray(part["table"], F32)])


def eval32(x, part: dict, form: str) -> np.ndarray:
    """One part's program in float32, as the kernels run it (``part``: part_values)."""
    x = np.asarray(x, F32)
    p = _p32(x, part)
    if form == "Even":
        return p
    if form == "Odd":
        return np.copysign(p, x).astype(F32)
    s = (F32(0.5) + np.copysign(p, x)).astype(F32)
    if form == "HalfPlusOdd":
        return s
    xc = np.where(x < -F32(part["clamp"]), -F32(part["clamp"]), x).astype(F32)
    with np.errstate(invalid="ignore", over="ignore"):
        return (xc * s).astype(F32)


def eval64(x, part: dict, form: str) -> np.ndarray:
    """The float64 kernels: the same program in double (float32 coefficients, the cell of
    rint(u*scale) in double)."""
    x = np.asarray(x, np.float64)
    c = float(part["clamp"])
    u = np.abs(x)
    u = np.where(u > c, c, u)
    with np.errstate(invalid="ignore"):
        s = np.rint(u * float(part["scale"]))
        k = np.where(np.isnan(s), 0, s).astype(np.int64) & (CELLS - 1)
    t = np.asarray(part["table"], np.float64)
    # numpy has no float64 FMA: the kernel fuses (std::fma), this rounds twice (tests allow it)
    p = replay.poly(replay.Arith("float64", fused=False), u, [row[k] for row in t])
    if form == "Even":
        return p
    if form == "Odd":
        return np.copysign(p, x)
    h = 0.5 + np.copysign(p, x)
    if form == "HalfPlusOdd":
        return h
    with np.errstate(invalid="ignore"):
        return np.where(x < -c, -c, x) * h


# ---------------------------------------------------------------- errors and specs


def measure(fn: str, part_name: str, part: dict) -> dict:
    """Errors of the float32 program against the exact function over a uniform grid of
    [-24, 24] (2^21 + 1 points) plus every float32 within 1e-3 of +-R and +-clamp."""
    form = DESIGN[fn]["forms"][PARTS.index(part_name)]
    grid = np.linspace(-24.0, 24.0, 2**21 + 1).astype(F32)
    r = (LAST - 0.5) / float(part["scale"])
    near = np.concatenate([specmod.floats_near(s * v, specmod.NEAR_CLAMP)
                           for v in (r, float(part["clamp"])) for s in (1, -1)])  # fmt: skip
    xs = np.concatenate([grid, near])
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(eval32(xs, part, form).astype(np.float64) - exact(fn, part_name, xs))
    i = int(np.argmax(err))
    return {"max_abs_float32": float(err[i]), "argmax_float32": float(xs[i])}


def build_spec(fn: str) -> dict:
    d = design(fn)
    forward = fit_table(fn, "forward")
    tables = {
        "forward": forward,
        "backward_direct": fit_table(fn, "backward_direct"),
        "backward_matched": matched_table(fn, forward),
    }
    parts = {}
    for name, table in tables.items():
        part = {
            "form": DESIGN[fn]["forms"][PARTS.index(name)],
            "scale": specmod.f32_hex(d["scale"]),
            "clamp": specmod.f32_hex(d["clamp"]),
            "offset": specmod.f32_hex(d["offset"]),
            "table": [[specmod.f32_hex(v) for v in row] for row in table],
        }
        part["errors"] = measure(fn, name, part_values(part))
        parts[name] = part
    return {
        **specmod.envelope(fn, "cells", "accurate", specmod.FIT_ALL, PARTS, "direct"),
        "tails_from": DESIGN[fn]["tails_from"],
        "cells": CELLS,
        "degree": DEGREE,
        **parts,
    }


def spec_path(fn: str, root: Path | None = None) -> Path:
    return specmod.spec_path(fn, KIND, root=root)


def load(fn: str, root: Path | None = None) -> dict:
    return specmod.load(spec_path(fn, root), KIND)


def main(argv: list[str] | None = None) -> int:
    texts = {
        spec_path(fn).name: (lambda fn=fn: specmod.dumps(build_spec(fn), KIND)) for fn in FUNCTIONS
    }
    return cli(argv, COMMAND, __doc__, SPEC_DIR, texts)


if __name__ == "__main__":
    sys.exit(main())
