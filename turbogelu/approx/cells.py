"""Piecewise-cubic GELU on 32 cells: the CPU's table-driven kernel ("cells").

The polynomial kernel (family_eval.h's GELU form) spends 12 multiply-adds per element; on
the build machine that, not memory, bounds its speed at 1M elements (the benchmark's degree
curve: ~19 us per extra FMA). A short polynomial per cell needs four: each cell of width
h = 1/scale ~ 0.34 holds its own cubic, and the four coefficients of a lane's cell are looked
up by permutes from 32-entry tables held in registers (AVX-512 vpermt2ps). The kernel
(``cells_eval`` in kernels/include/turbogelu/family_eval.h, CellForm XTimes) evaluates::

    xc = max(x, -clamp)                 # NaN stays NaN; -inf becomes -clamp
    xi = min(xc, clamp)
    s  = fma(xi, scale, offset)         # offset = 16 + 1.5*2^23: s is an integer in float32,
    k  = bits(s) & 31                   # rint(16 + xi*scale), ties to even; the cell number
    p  = ((c3[k] xi + c2[k]) xi + c1[k]) xi + c0[k]        (fused multiply-adds)
    forward  = xc * p      where p ~ Phi(x) = gelu(x)/x
    backward = grad * p    where p ~ gelu'(x)

Cells 2..30 (29 of them, symmetric about x = 0, which is the centre of cell 16) hold the fits;
cells 0 and 1 are zero (x <= -R: forward -clamp*0 = -0.0, backward 0) and cell 31 is the
constant 1 (x >= R: forward x exactly, +inf included; backward grad), with R = 14.5/scale.
The cubics are in x itself, not in a shifted variable: the conditioning costs a few float32
ulps of p at |x| ~ 5, which the errors below include (they are measured on this replay,
which the tests compare with the kernels bit for bit).

Each cell's cubic is the weighted minimax fit (a linear programme on 513 points of the cell,
widened by 1 % on each side so that a lane rounded into a neighbouring cell is still
covered), weight |x| for the forward (the kernel multiplies p by x) and 1 for the backward,
then rounded to float32. The matched backward is the derivative of the forward's program:
d/dx (x p(x)) = sum (j+1) p_j x^j, rounded to float32.

    python -m turbogelu.approx.cells --check    # refit and compare with the committed specs
    python -m turbogelu.approx.cells --out DIR  # refit and write the specs to DIR

(the committed specs, data/specs/cells/gelu_*.json, are written only by ``python -m turbogelu
fit --all``, ``make fit``, which runs this fit).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from .. import _table
from . import reference, replay, rounding
from . import spec as specmod

F32 = np.float32
SPEC_DIR = specmod.SPEC_DIR / specmod.SCHEMAS["cells"].folder
MODES = specmod.MODES
PARTS = specmod.PARTS  # forward, backward_direct, backward_matched
DEGREE = specmod.CELLS_TABLE_SHAPE[0] - 1  # a cubic per cell
CELLS = specmod.CELLS_TABLE_SHAPE[1]  # one vpermt2ps table: the low 5 bits of the index
CENTER = 16  # x = 0 is the centre of this cell
MAGIC = 1.5 * 2.0**23  # float32 values in [2^23, 2^24) are the integers
R_DEFAULT = specmod.CELLS_TAILS_FROM  # where the tails begin
POINTS = 513  # LP points per cell
PAD = 0.01  # each cell's fit interval is widened by this fraction of its width, each side
COMMAND = specmod.SCHEMAS["cells"].command


def design(r: float = R_DEFAULT) -> dict:
    """scale, clamp and offset (float32) for tails beyond |x| = r."""
    scale = F32((CENTER - 1.5) / r)  # s(+-r) = 16 +- 14.5: the outer edges of cells 2 and 30
    clamp = F32((CENTER - 1) / float(scale))  # s(+-clamp) ~ 1 and 31: the tail cells
    offset = F32(CENTER + MAGIC)  # exact: an integer below 2^24
    return {"scale": scale, "clamp": clamp, "offset": offset}


def cell_interval(k: int, scale: float) -> tuple[float, float]:
    """The x interval whose s = 16 + x*scale rounds to k (without the padding)."""
    return ((k - 0.5 - CENTER) / float(scale), (k + 0.5 - CENTER) / float(scale))


def phi_like(x, mode: str) -> np.ndarray:
    """gelu(x)/x, the forward's p: Phi(x) (exact form) or (1 + tanh(u))/2 (tanh form)."""
    x = np.asarray(x, np.float64)
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.5, reference.gelu(safe, mode) / safe)


def target(mode: str, direction: str):
    if direction == "forward":
        return lambda x: phi_like(x, mode)
    return lambda x: reference.gelu_grad(x, mode)


def minimax_lp(a: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """(c, t): the c minimising t = max |a c - y| over the rows (a linear programme, HiGHS);
    the cells fits weight a's rows and y by the error's weight before the call."""
    from scipy.optimize import linprog

    n, ones = a.shape[1], np.ones((a.shape[0], 1))
    a_ub = np.vstack([np.hstack([a, -ones]), np.hstack([-a, -ones])])
    b_ub = np.concatenate([y, -y])
    cost = np.r_[np.zeros(n), 1.0]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=[(None, None)] * (n + 1), method="highs")
    if not res.success:  # pragma: no cover - the LP is always feasible
        raise RuntimeError(f"cell fit failed: {res.message}")
    return res.x[:n], float(res.x[n])


def _minimax(xs: np.ndarray, ys: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Coefficients (low first) minimising max w |sum c_j x^j - y| over xs (an LP)."""
    v = np.vander(xs, DEGREE + 1, increasing=True) * w[:, None]
    return minimax_lp(v, w * ys)[0]


def fit_table(mode: str, direction: str, r: float = R_DEFAULT) -> np.ndarray:
    """(DEGREE + 1, CELLS) float32: row j holds the coefficient of x^j of every cell."""
    d = design(r)
    f = target(mode, direction)
    table = np.zeros((DEGREE + 1, CELLS), F32)
    table[0, CELLS - 1] = 1.0  # x >= R: forward x * 1, backward grad * 1
    for k in range(2, CELLS - 1):
        lo, hi = cell_interval(k, d["scale"])
        pad = PAD * (hi - lo)
        xs = np.linspace(lo - pad, hi + pad, POINTS)
        w = np.maximum(np.abs(xs), 0.25) if direction == "forward" else np.ones_like(xs)
        table[:, k] = _minimax(xs, f(xs), w).astype(F32)
    return table


def matched_table(forward: np.ndarray) -> np.ndarray:
    """The derivative of the forward program x*p(x), cell by cell, rounded to float32."""
    j = np.arange(1, DEGREE + 2, dtype=np.float64)[:, None]
    return (forward.astype(np.float64) * j).astype(F32)


# ---------------------------------------------------------------- replay (bit-exact)


def _clamped(x, clamp):
    x = np.asarray(x, F32)
    c = F32(clamp)
    xc = np.where(x < -c, -c, x).astype(F32)  # NaN compares false and stays
    return xc, np.where(xc > c, c, xc).astype(F32)


def cell_index(xi, scale, offset) -> np.ndarray:
    """The kernels' cell number: the low 5 bits of fma(xi, scale, offset)."""
    s = replay.fma32(xi, F32(scale), F32(offset))
    return (s.view(np.int32) & (CELLS - 1)).astype(np.intp)


def eval32(xi, table: np.ndarray, scale, offset) -> np.ndarray:
    xi = np.asarray(xi, F32)
    k = cell_index(xi, scale, offset)
    t = np.asarray(table, F32)
    return replay.poly32(xi, [row[k] for row in t])  # each lane's own cubic, by Horner


def forward32(x, cells: dict) -> np.ndarray:
    """The kernel's forward in float32 (``cells`` = part_values of a spec part)."""
    xc, xi = _clamped(x, cells["clamp"])
    p = eval32(xi, cells["table"], cells["scale"], cells["offset"])
    with np.errstate(invalid="ignore", over="ignore"):
        return (xc * p).astype(F32)


def backward32(x, cells: dict, grad=None) -> np.ndarray:
    xc, xi = _clamped(x, cells["clamp"])
    p = eval32(xi, cells["table"], cells["scale"], cells["offset"])
    g = np.ones_like(xi) if grad is None else np.asarray(grad, F32)
    with np.errstate(invalid="ignore", over="ignore"):
        return (g * p).astype(F32)


def _eval64(x, cells: dict):
    """The float64 kernel: the same program in double (float32 coefficients)."""
    x = np.asarray(x, np.float64)
    c = float(cells["clamp"])
    xc = np.where(x < -c, -c, x)
    xi = np.where(xc > c, c, xc)
    with np.errstate(invalid="ignore"):
        s = np.rint(xi * float(cells["scale"]) + CENTER)  # exact near the cell edges
        k = np.where(np.isnan(s), 0, s).astype(np.int64) & (CELLS - 1)
        t = np.asarray(cells["table"], np.float64)
        p = replay.poly(replay.Arith("float64", fused=False), xi, [row[k] for row in t])
    return xc, p


def forward64(x, cells: dict) -> np.ndarray:
    xc, p = _eval64(x, cells)
    return xc * p


def backward64(x, cells: dict) -> np.ndarray:
    return _eval64(x, cells)[1]


# ---------------------------------------------------------------- errors and specs


def measure(cells: dict, mode: str, grad: bool) -> dict:
    """Errors of the float32 program against the exact function of its form, over the
    spec grid (uniform [-6, 6], 1e6 + 1 points) plus every float32 within 1e-3 of +-R and of
    +-clamp (where the tails begin and where x is clamped)."""
    lo, hi, n = specmod.GRID
    grid = np.linspace(lo, hi, n).astype(F32)
    r = (CENTER - 1.5) / float(cells["scale"])
    near = np.concatenate([specmod.floats_near(v, specmod.NEAR_CLAMP)
                           for v in (r, float(cells["clamp"]))])  # fmt: skip
    run = backward32 if grad else forward32
    ref = reference.gelu_grad if grad else reference.gelu
    err_grid = np.abs(run(grid, cells).astype(np.float64) - ref(grid.astype(np.float64), mode))
    err_near = np.abs(run(near, cells).astype(np.float64) - ref(near.astype(np.float64), mode))
    xs = np.concatenate([grid, near])
    errs = np.concatenate([err_grid, err_near])
    i = int(np.argmax(errs))
    return {
        "max_abs_float32": float(errs[i]),
        "argmax_float32": float(xs[i]),
        # the correctly rounded sum: np.mean's last digits depend on the CPU's SIMD width
        "mean_abs_float32_grid": rounding.exact_mean(err_grid),
    }


def part_values(part: dict) -> dict:
    """A spec part as numbers: table (4 x 32 float32), scale, clamp, offset."""
    return {
        "table": np.array([[specmod.from_hex(v) for v in row] for row in part["table"]], F32),
        "scale": F32(specmod.from_hex(part["scale"])),
        "clamp": F32(specmod.from_hex(part["clamp"])),
        "offset": F32(specmod.from_hex(part["offset"])),
    }


def build_spec(mode: str, r: float = R_DEFAULT) -> dict:
    d = design(r)
    fwd = fit_table(mode, "forward", r)
    tables = {
        "forward": fwd,
        "backward_direct": fit_table(mode, "backward", r),
        "backward_matched": matched_table(fwd),
    }
    parts = {}
    for name, table in tables.items():
        part = {
            "scale": specmod.f32_hex(d["scale"]),
            "clamp": specmod.f32_hex(d["clamp"]),
            "offset": specmod.f32_hex(d["offset"]),
            "table": [[specmod.f32_hex(v) for v in row] for row in table],
        }
        part["errors"] = measure(part_values(part), mode, grad=name != "forward")
        parts[name] = part
    direct = parts["backward_direct"]["errors"]["max_abs_float32"]
    matched = parts["backward_matched"]["errors"]["max_abs_float32"]
    default = "direct" if direct <= matched else "matched"
    head = specmod.envelope(_table.APPROXIMATE[mode], "cells", "accurate", specmod.FIT_ALL, PARTS,
                            default)  # fmt: skip
    return {
        **head,
        "tails_from": r,
        "cells": CELLS,
        "center": CENTER,
        "degree": DEGREE,
        **parts,
    }


def spec_path(mode: str) -> Path:
    return specmod.spec_path(mode, "cells")


def dumps(spec: dict) -> str:
    return specmod.dumps(spec, "cells")


def load(path: str | Path) -> dict:
    return specmod.load(path, "cells")


# ---------------------------------------------------------------- a refit against the committed

# A cells table is not exactly specified: each cubic is the float32 rounding of a minimax LP's
# solution, which HiGHS finds to its primal feasibility tolerance (1e-7, scipy's default) from
# float64 targets and weights through numpy's tanh / exp and scipy's erfc, whose last bits
# depend on the CPU (numpy's SIMD loops). On another CPU the LP may stop at another point
# within that tolerance and the refit round to other float32 entries: measured under .ci/run's
# imitation (numpy without its AVX-512 / AVX2 loops), 23 of the 128 entries of tanh's forward
# table, the two programs 1.4e-7 apart in cell 8 (GELU's: none; sigmoid's, SiLU's: <= 2.1e-8).
# So a refit matches the committed spec when everything else is identical (scale, clamp,
# offset, forms, settings: exactly specified) and each table, where its bits differ, gives a
# program within SOLVER_ATOL of the committed one over every cell (the cubics compared on
# their cells in float64): 5x the LP's tolerance, 3.6x the largest gap measured, below the
# cells' own errors (>= 2e-6). Errors: to spec.MEASURED_RTOL where the tables are the same
# bits (float64 figures through the CPU's transcendentals); where they differ, the max and mean
# errors of the refit's own tables to REFIT_ERRORS_RTOL (measured: 1.2e-11, the max error lying
# in another cell), their argmax not compared. The committed bits are the kernels': the
# header (codegen --check) and the replay tests hold those bit for bit.
SOLVER_ATOL = 5e-7
REFIT_ERRORS_RTOL = 1e-2
CHECK_RULE = (
    f"settings and constants bit for bit, tables as programs within {SOLVER_ATOL:g} "
    "(the LP's tolerance), measured figures to a relative tolerance"
)


def _cell_ranges(doc: dict, part: str) -> list[tuple[float, float]]:
    """Each cell's interval of the table's variable: x around cell ``center`` (GELU's cells),
    or u = |x| >= 0 from cell 0 (the family's, which have no "center")."""
    scale = float(specmod.from_hex(doc[part]["scale"]))
    center = doc.get("center", 0)
    out = []
    for k in range(CELLS):
        lo, hi = (k - 0.5 - center) / scale, (k + 0.5 - center) / scale
        out.append((lo if "center" in doc else max(lo, 0.0), hi))
    return out


def table_gap(old: dict, new: dict, part: str, points: int = 257) -> float:
    """max |p_old - p_new| over every cell of ``part`` (its widened fit interval, float64):
    how far apart two specs' tables are as programs."""
    a = np.array([[specmod.from_hex(v) for v in row] for row in old[part]["table"]], np.float64)
    b = np.array([[specmod.from_hex(v) for v in row] for row in new[part]["table"]], np.float64)
    if a.shape != b.shape:
        return math.inf
    gap = 0.0
    for k, (lo, hi) in enumerate(_cell_ranges(old, part)):
        pad = PAD * (hi - lo)
        t = np.linspace(lo - pad, hi + pad, points)
        d = np.polynomial.polynomial.polyval(t, a[:, k] - b[:, k])
        gap = max(gap, float(np.max(np.abs(d))))
    return gap


def refit_differences(old: dict, new: dict) -> list[str]:
    """Where a refit (``new``) differs from a committed cells spec (``old``), both parsed, by
    the rule above: ``spec.differences`` but the tables as programs within ``SOLVER_ATOL``."""
    parts = [p for p in PARTS if isinstance(old.get(p), dict) and isinstance(new.get(p), dict)]

    def bare(doc: dict) -> dict:
        return {k: ({n: v for n, v in doc[k].items() if n not in ("table", "errors")}
                    if k in parts else doc[k]) for k in doc}  # fmt: skip

    out = specmod.differences(bare(old), bare(new))
    if out:  # another design: the tables are not comparable
        return out
    for part in parts:
        ea, eb = old[part].get("errors", {}), new[part].get("errors", {})
        if old[part].get("table") == new[part].get("table"):
            out += specmod.differences({part: {"errors": ea}}, {part: {"errors": eb}})
            continue
        try:
            gap = table_gap(old, new, part)
        except (KeyError, TypeError, ValueError):
            gap = math.inf
        if not gap <= SOLVER_ATOL:
            out.append(f"{part}.table: the programs are {gap:.3g} apart (> {SOLVER_ATOL:g})")
        figures = ("max_abs_float32", "mean_abs_float32_grid")
        ea, eb = ({k: v for k, v in e.items() if k in figures} for e in (ea, eb))
        out += specmod.differences(
            {part: {"errors": ea}}, {part: {"errors": eb}}, REFIT_ERRORS_RTOL
        )
    return out


def _errors_summary(spec: dict) -> str:
    return ", ".join(f"{p} max {spec[p]['errors']['max_abs_float32']:.3e}" for p in PARTS)


def cli(
    argv: list[str] | None,
    command: str,
    doc: str,
    folder: Path,
    texts: dict,
    compare=None,
    summary=_errors_summary,
    rule: str = "",
) -> int:
    """The spec writers' command line (this module's, family_cells.py's and cells16.py's):
    ``texts`` maps each file name to a function giving its refitted text; --check compares
    (``compare``: the writer's refit rule, ``rule`` its words; this module's by default)
    instead of writing, a committed file that differs is kept unless --force; ``summary`` of
    a written spec follows its line."""
    compare = refit_differences if compare is None else compare
    rule = rule or CHECK_RULE
    ap = argparse.ArgumentParser(prog=command, description=doc.split("\n\n")[0])
    ap.add_argument(
        "--check",
        action="store_true",
        help="refit and compare with the committed specs instead of writing",
    )
    ap.add_argument("--out", type=Path, default=folder, help="folder for the specs")
    ap.add_argument(
        "--force",
        action="store_true",
        help=f"overwrite a committed spec ({folder}) that differs (under `fit --all` only)",
    )
    args = ap.parse_args(argv)
    status = 0
    for name, refit in texts.items():
        text = refit()
        path = args.out / name
        if args.check:  # by the refit rule, never the text
            diffs = specmod.file_differences(path, text, compare)
            print(f"{path}: {'DIFFERS from' if diffs else 'matches'} the refit")
            for d in diffs[:20]:
                print(f"  {d}")
            status |= 1 if diffs else 0
            continue
        try:  # a committed file: left as it is when the refit matches, kept when it differs
            outcome = specmod.write_checked(path, text, force=args.force, compare=compare)
        except specmod.Differs as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
            continue
        errs = summary(json.loads(text))
        if outcome == "unchanged":
            print(f"{path}: unchanged (the refit matches it: {rule}): {errs}")
        else:
            print(f"{specmod.describe_write(path, outcome)}: {errs}")
    return status


def main(argv: list[str] | None = None) -> int:
    texts = {spec_path(m).name: (lambda m=m: dumps(build_spec(m))) for m in MODES}
    return cli(argv, COMMAND, __doc__, SPEC_DIR, texts)


if __name__ == "__main__":
    sys.exit(main())
