"""Cells programs sized for a 16-bit format (issue 41, item 2): the lowest degree per cell
that keeps the format's rule on every input, proven on the inputs themselves.

The CPU's cells programs (``cells.py`` for GELU, ``family_cells.py`` for sigmoid, tanh and
SiLU) hold a cubic per cell, fitted to the float32 bound. A bfloat16 or float16 output needs
less: its rule (``family_programs``: within 1 ulp of the correctly rounded value, and below
x = -3, where the rule says so, |error| <= 3e-5 beyond half an ulp of the result) is met by
any float32 result inside an interval of outputs, and a 16-bit format has few inputs (65,536
patterns), each of which lands in one known cell. So, with the shipped layouts (scale,
clamp, the fixed tail cells) and forms unchanged:

* every finite input x of the format is mapped, as the kernel maps it, to its cell k, its
  evaluation variable v (GELU: the clamped x; the family: u = min(|x|, clamp)) and the form's
  output a + b p(v) (GELU ``x p``: a = 0, b = max(x, -clamp); sigmoid ``1/2 + sign(x) p``;
  tanh ``sign(x) p``; SiLU ``x (1/2 + sign(x) p)``);
* its acceptable float32 outputs are one interval (``mindegree_problem.interval_of_values``
  of the format values the rule accepts);
* per cell and degree d, a linear programme over the cell's inputs finds the polynomial p
  of degree d whose outputs sit deepest inside the intervals: the least t with
  |a + b p(v) - m| <= t h for every input (m, h: the interval's centre and half width).
  t* > 1 proves that no real polynomial of degree d serves that cell (the intervals are the
  rule itself); t* <= 1 leaves room, and the coefficients rounded to float32 are then
  replayed in float32 (the kernels' own replay) and every input's output checked against its
  interval: the proof of a program is that check, on every input.

``search`` walks d = 1, 2, 3 and reports, per function and format, the lowest degree whose
float32 table passes and the t* of each lower one (max over cells). Fewer coefficients per
cell are fewer table lookups (one two-table permute each) and fewer multiply-adds.

    python -m turbogelu.approx.cells16                   # the table, every function and format
    python -m turbogelu.approx.cells16 --out FILE.json   # and its record

numpy / scipy (HiGHS) only; a few seconds per function and format.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import cells, family_cells, family_programs, mindegree_problem, report, rounding

F32 = np.float32
F64 = np.float64
FORMATS = ("bfloat16", "float16")
# The functions with cells programs: GELU's two forms (cells.py) and the family's three
# (family_cells.py), by the name of their exact function in rounding.FUNCTIONS.
FUNCTIONS = ("gelu", "gelu_tanh", "sigmoid", "tanh", "silu")
DEGREES = (1, 2, 3)
SHIPPED_DEGREE = cells.DEGREE
ABS_BOUND = family_programs.ABS_BOUND


@dataclass(frozen=True)
class Inputs:
    """Every finite input of a format as one cells program sees it."""

    x: np.ndarray  # float32 values of the format
    cell: np.ndarray  # the kernel's cell number
    v: np.ndarray  # float32: the variable the cell's polynomial is evaluated at
    a: np.ndarray  # output = a + b p(v), exactly (float64)
    b: np.ndarray
    lo: np.ndarray  # float32 interval of acceptable outputs (rounded into the rule)
    hi: np.ndarray
    mlo: np.ndarray  # its real ends (float64)
    mhi: np.ndarray


def _layout(fn: str) -> dict:
    """scale, clamp, offset, the fitted cells and the fixed ones {cell: constant}."""
    if fn in ("gelu", "gelu_tanh"):
        d = cells.design()
        fixed = {0: 0.0, 1: 0.0, cells.CELLS - 1: 1.0}
        return {**d, "fitted": range(2, cells.CELLS - 1), "fixed": fixed}
    d = family_cells.design(fn)
    last = family_cells.fit_table(fn, "forward")[0, family_cells.LAST]  # the shipped constant
    return {**d, "fitted": range(family_cells.LAST), "fixed": {family_cells.LAST: float(last)}}


def _form(fn: str, x: np.ndarray, clamp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(v, a, b): the evaluation variable and the output a + b p(v) of the forward's form."""
    c = F32(clamp)
    if fn in ("gelu", "gelu_tanh"):
        xc, xi = cells._clamped(x, c)
        return xi, np.zeros(x.shape), xc.astype(F64)
    v = family_cells._u(x, c)
    sign = np.where(np.signbit(x), -1.0, 1.0)
    if fn == "sigmoid":
        return v, np.full(x.shape, 0.5), sign
    if fn == "tanh":
        return v, np.zeros(x.shape), sign
    xc = np.where(x < -c, -c, x).astype(F64)  # silu: x (1/2 + sign(x) p)
    return v, xc / 2, xc * sign


def inputs(fn: str, fmt: str) -> Inputs:
    """The format's finite inputs, their cells and forms, and their acceptable outputs."""
    if fn not in FUNCTIONS or fmt not in FORMATS:
        raise ValueError(f"fn must be one of {FUNCTIONS} and fmt one of {FORMATS}")
    x, cr, exact = report.reference_table(fn, fmt)
    lay = _layout(fn)
    v, a, b = _form(fn, x, lay["clamp"])
    cell = cells.cell_index(v, lay["scale"], lay["offset"])
    o = rounding.to_ordered(cr, fmt)
    jlo, jhi = o - 1, o + 1
    tail = x < family_programs.ONE_ULP_FROM[fn]
    if tail.any():  # there, |error| <= ABS_BOUND beyond half an ulp of the result instead
        jlo[tail], jhi[tail] = mindegree_problem.within_abs(exact[tail], fmt, ABS_BOUND)
    mlo, mhi, lo, hi = mindegree_problem.interval_of_values(jlo, jhi, fmt)
    return Inputs(x, cell, v, a, b, F32(lo), F32(hi), F64(mlo), F64(mhi))


def _cell_lp(v, a, b, mlo, mhi, degree: int, no_constant: bool) -> tuple[np.ndarray, float]:
    """Coefficients (low first) and t*: the least t with |a + b p(v) - m| <= t h."""
    m, h = (mlo + mhi) / 2, (mhi - mlo) / 2
    cols = list(range(1 if no_constant else 0, degree + 1))
    vv = np.asarray(v, F64)
    base = np.stack([vv**j for j in cols], axis=1) * (b / h)[:, None]
    coef, t = cells.minimax_lp(base, (m - a) / h)
    c = np.zeros(degree + 1)
    c[cols] = coef
    return c, t


def fit(fn: str, fmt: str, degree: int, inp: Inputs | None = None) -> tuple[np.ndarray, dict]:
    """The (degree + 1, 32) float32 table of degree ``degree`` fitted on the format's inputs,
    and t* per fitted cell that has inputs."""
    inp = inputs(fn, fmt) if inp is None else inp
    lay = _layout(fn)
    table = np.zeros((degree + 1, cells.CELLS), F32)
    for k, value in lay["fixed"].items():
        table[0, k] = value
    odd = fn in ("sigmoid", "tanh", "silu")  # f(+-0) exact: no constant in cell 0
    t = {}
    for k in lay["fitted"]:
        m = (inp.cell == k) & np.isfinite(inp.mlo) & np.isfinite(inp.mhi)
        if not m.any():
            continue
        c, t[k] = _cell_lp(inp.v[m], inp.a[m], inp.b[m], inp.mlo[m], inp.mhi[m], degree,
                           no_constant=odd and k == 0)  # fmt: skip
        table[:, k] = c.astype(F32)
    return table, t


def replay32(fn: str, x, table: np.ndarray) -> np.ndarray:
    """The kernels' float32 forward with ``table`` (any degree): the shipped replays."""
    lay = _layout(fn)
    part = {"scale": lay["scale"], "clamp": lay["clamp"], "offset": lay["offset"],
            "table": np.asarray(table, F32)}  # fmt: skip
    if fn in ("gelu", "gelu_tanh"):
        return cells.forward32(x, part)
    form = family_cells.DESIGN[fn]["forms"][0]
    return family_cells.eval32(x, part, form)


def verify(fn: str, fmt: str, table: np.ndarray, inp: Inputs | None = None) -> dict:
    """Every finite input's float32 output against its acceptable interval."""
    inp = inputs(fn, fmt) if inp is None else inp
    got = replay32(fn, inp.x, table)
    bad = ~((got >= inp.lo) & (got <= inp.hi))
    out = report.round_output(got, fmt)
    cr = report.reference_table(fn, fmt)[1]
    one = inp.x >= family_programs.ONE_ULP_FROM[fn]
    ulps = np.abs(rounding.to_ordered(out, fmt) - rounding.to_ordered(cr, fmt))
    return {
        "inputs": int(inp.x.size),
        "failures": int(bad.sum()),
        "max_ulp": int(ulps[one].max()) if one.any() else 0,
        "worst_inputs": [float(v) for v in inp.x[bad][:5]],
    }


def search(fn: str, fmt: str, degrees=DEGREES) -> dict:
    """Per degree: t* (max over cells, and the worst cell) and the float32 table's check;
    ``degree``: the lowest that passes on every input (None if none does)."""
    inp = inputs(fn, fmt)
    rows, found, tables = [], None, {}
    for d in degrees:
        table, t = fit(fn, fmt, d, inp)
        worst = max(t, key=t.get)
        check = verify(fn, fmt, table, inp)
        rows.append({"degree": d, "t_star": t[worst], "worst_cell": int(worst),
                     "proven_infeasible": t[worst] > 1.0, **check})  # fmt: skip
        if found is None and check["failures"] == 0:
            found = d
            tables[d] = table
    return {"function": fn, "format": fmt, "degree": found, "shipped_degree": SHIPPED_DEGREE,
            "rows": rows, "tables": {d: t.tolist() for d, t in tables.items()}}  # fmt: skip


def render(results: list[dict]) -> str:
    """The markdown table: per function and format, each degree's t* and check."""
    lines = ["| function | format | lowest degree | " + " | ".join(
        f"degree {d}: t* (cell), failures" for d in DEGREES) + " |",
        "|---|---|---:|" + "---|" * len(DEGREES)]  # fmt: skip
    for r in results:
        cells_ = [f"{row['t_star']:.3g} ({row['worst_cell']}), {row['failures']}"
                  for row in r["rows"]]  # fmt: skip
        lines.append(f"| {r['function']} | {r['format']} | {r['degree']} | "
                     + " | ".join(cells_) + " |")  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m turbogelu.approx.cells16",
                                description=__doc__.split("\n\n")[0])  # fmt: skip
    p.add_argument("--functions", default=",".join(FUNCTIONS))
    p.add_argument("--formats", default=",".join(FORMATS))
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    a = p.parse_args(argv)
    results = [search(fn, fmt) for fn in a.functions.split(",") for fmt in a.formats.split(",")]
    print(render(results))
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(results, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
