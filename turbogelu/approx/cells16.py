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

``search`` walks d = 1, 2, 3 up to the lowest degree whose float32 table passes and reports
the t* of each degree below it (max over cells): t* > 1 there is the proof. Fewer coefficients per
cell are fewer table lookups (one two-table permute each) and fewer multiply-adds.

    python -m turbogelu.approx.cells16 --check    # the table, and the refit against the specs
    python -m turbogelu.approx.cells16 --out DIR  # the table, and the specs written to DIR

The specs (``data/specs/cells16/<function>_<format>.json``, one per format-sized program: its
forward, the forward's own derivative as the matched backward, the search's t* per degree)
are written only by ``python -m turbogelu fit --all``.

numpy / scipy (HiGHS) only; a few seconds per function and format.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import cells, family_cells, family_programs, mindegree_problem, report, rounding
from . import spec as specmod

F32 = np.float32
F64 = np.float64
FORMATS = ("bfloat16", "float16")
# The functions with cells programs: GELU's two forms (cells.py) and the family's three
# (family_cells.py), by the name of their exact function in rounding.FUNCTIONS.
FUNCTIONS = ("gelu", "gelu_tanh", "sigmoid", "tanh", "silu")
DEGREES = (1, 2, 3)
SHIPPED_DEGREE = cells.DEGREE
ABS_BOUND = family_programs.ABS_BOUND
# The fit (``fit``): every input kept within INPUT_CAP of its interval's half width (room for
# the float32 rounding of the coefficients and of the evaluation), the function followed on
# DENSE points of each cell to the format's relative precision (PRECISION bits).
INPUT_CAP = 0.95
DENSE = 257
ACTIVE_START = 512  # the inputs' rows an LP starts from (``_active``)
ACTIVE_TOL = 1e-6  # a row violated by more than HiGHS's feasibility tolerance (1e-7)
PRECISION = {"bfloat16": 8, "float16": 11}


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


def accepted(fn: str, fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, jlo, jhi): every finite input of fmt (float32) and the ordered integers
    (``rounding.to_ordered``) of the fmt outputs the rule accepts for it, jlo..jhi."""
    x, cr, exact = report.reference_table(fn, fmt)
    o = rounding.to_ordered(cr, fmt)
    jlo, jhi = o - 1, o + 1
    tail = x < family_programs.ONE_ULP_FROM[fn]
    if tail.any():  # there, |error| <= ABS_BOUND beyond half an ulp of the result instead
        jlo[tail], jhi[tail] = mindegree_problem.within_abs(exact[tail], fmt, ABS_BOUND)
    return x, jlo, jhi


def inputs(fn: str, fmt: str) -> Inputs:
    """The format's finite inputs, their cells and forms, and their acceptable outputs."""
    if fn not in FUNCTIONS or fmt not in FORMATS:
        raise ValueError(f"fn must be one of {FUNCTIONS} and fmt one of {FORMATS}")
    x, jlo, jhi = accepted(fn, fmt)
    lay = _layout(fn)
    v, a, b = _form(fn, x, lay["clamp"])
    cell = cells.cell_index(v, lay["scale"], lay["offset"])
    mlo, mhi, lo, hi = mindegree_problem.interval_of_values(jlo, jhi, fmt)
    return Inputs(x, cell, v, a, b, F32(lo), F32(hi), F64(mlo), F64(mhi))


def _input_rows(v, a, b, mlo, mhi, cols):
    """(rows, rhs): |rows c - rhs| <= t says every input's output is within t of its
    interval's half width from its centre."""
    m, h = (mlo + mhi) / 2, (mhi - mlo) / 2
    vv = np.asarray(v, F64)
    return np.stack([vv**j for j in cols], axis=1) * (b / h)[:, None], (m - a) / h


def _smooth_rows(fn: str, fmt: str, k: int, cols):
    """(rows, rhs) on DENSE points of cell k (widened by cells.PAD), both signs for the
    family: the error in units of a smooth tolerance, the format's relative precision times
    |f(x)| (ABS_BOUND in the tail), so that the fit follows the function between the inputs."""
    lay = _layout(fn)
    scale, gelu = float(lay["scale"]), fn in ("gelu", "gelu_tanh")
    centre = cells.CENTER if gelu else 0
    lo, hi = (k - 0.5 - centre) / scale, (k + 0.5 - centre) / scale
    pad = cells.PAD * (hi - lo)
    v = np.linspace(lo - pad if gelu else max(lo - pad, 0.0), hi + pad, DENSE)
    rows, rhs = [], []
    for sign in (1.0,) if gelu else (1.0, -1.0):
        x = sign * v
        f = np.asarray(rounding.FUNCTIONS[fn][0](x), F64)
        if gelu:
            a, b = np.zeros_like(x), x
        elif fn == "sigmoid":
            a, b = np.full_like(x, 0.5), np.full_like(x, sign)
        elif fn == "tanh":
            a, b = np.zeros_like(x), np.full_like(x, sign)
        else:
            a, b = x / 2, x * sign
        tol = np.maximum(np.abs(f) * 2.0 ** -PRECISION[fmt], 2.0**-133)
        tol = np.where(x < family_programs.ONE_ULP_FROM[fn], ABS_BOUND, tol)
        rows.append(np.stack([v**j for j in cols], axis=1) * (b / tol)[:, None])
        rhs.append((f - a) / tol)
    return np.vstack(rows), np.concatenate(rhs)


def _active(rows, rhs, solve, slack):
    """Solve on a subset of the inputs' rows, adding those the solution violates until none
    is: the optimum of the subset is then the optimum of all (a relaxation whose solution is
    feasible). ``solve(rows, rhs)`` -> (c, t); ``slack(t)``: the allowed |rows c - rhs|. A
    cell near 0 holds tens of thousands of 16-bit inputs, almost all far from binding."""
    n = len(rhs)
    take = np.unique(np.linspace(0, n - 1, min(n, ACTIVE_START)).astype(np.int64))
    while True:
        c, t = solve(rows[take], rhs[take])
        excess = np.abs(rows @ c - rhs) - slack(t)
        bad = np.setdiff1d(np.nonzero(excess > ACTIVE_TOL)[0], take)
        if bad.size == 0:  # (the subset's own rows hold to the solver's tolerance)
            return c, t
        take = np.union1d(take, bad[np.argsort(excess[bad])[::-1][:ACTIVE_START]])


def _smooth_fit(smooth, rows) -> np.ndarray:
    """``_smooth_within`` over the inputs' rows by ``_active``."""

    def solve(r, y):
        return _smooth_within(smooth, (r, y), INPUT_CAP), 0.0

    return _active(*rows, solve, lambda t: INPUT_CAP)[0]


def _smooth_within(smooth, inputs_, cap: float) -> np.ndarray:
    """The c minimising max |smooth rows c - rhs| with every input within ``cap`` of its
    half width (an LP; the caller knows it feasible: the inputs' own t* <= cap)."""
    from scipy.optimize import linprog

    (sa, sy), (ia, iy) = smooth, inputs_
    n = sa.shape[1]
    ones, zeros = np.ones((len(sy), 1)), np.zeros((len(iy), 1))
    a_ub = np.vstack(
        [
            np.hstack([sa, -ones]),
            np.hstack([-sa, -ones]),
            np.hstack([ia, zeros]),
            np.hstack([-ia, zeros]),
        ]
    )
    b_ub = np.concatenate([sy, -sy, iy + cap, cap - iy])
    res = linprog(
        np.r_[np.zeros(n), 1.0],
        A_ub=a_ub,
        b_ub=b_ub,
        bounds=[(None, None)] * (n + 1),
        method="highs",
    )
    if not res.success:  # pragma: no cover - feasible by the caller's check
        raise RuntimeError(f"cell fit failed: {res.message}")
    return res.x[:n]


def fit(fn: str, fmt: str, degree: int, inp: Inputs | None = None) -> tuple[np.ndarray, dict]:
    """The (degree + 1, 32) float32 table of degree ``degree`` and t* per fitted cell that has
    inputs (the proof: the least t putting every input's output within t of its half width).
    Where t* <= INPUT_CAP the table is the smooth fit (``_smooth_rows``) that keeps every input
    within INPUT_CAP: a polynomial that follows the function, so that its derivative (the
    matched backward) does too; elsewhere the inputs' own deepest fit."""
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
        cols = list(range(1 if odd and k == 0 else 0, degree + 1))
        rows = _input_rows(inp.v[m], inp.a[m], inp.b[m], inp.mlo[m], inp.mhi[m], cols)
        coef, t[k] = _active(*rows, cells.minimax_lp, lambda t: t)
        if t[k] <= INPUT_CAP:
            coef = _smooth_fit(_smooth_rows(fn, fmt, k, cols), rows)
        c = np.zeros(degree + 1)
        c[cols] = coef
        table[:, k] = c.astype(F32)
    return table, t


def table_values(fn: str, table: np.ndarray) -> dict:
    """A table with its function's layout, as the shipped replays take a spec part."""
    lay = _layout(fn)
    return {k: lay[k] for k in ("scale", "clamp", "offset")} | {"table": np.asarray(table, F32)}


def replay32(fn: str, x, table: np.ndarray) -> np.ndarray:
    """The kernels' float32 forward with ``table`` (any degree): the shipped replays."""
    part = table_values(fn, table)
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
    """Up the degrees to the lowest whose float32 table passes on every input: per degree
    tried, t* (max over cells, and the worst cell) and the table's check; ``degree``: the
    lowest that passes (None if none does)."""
    inp = inputs(fn, fmt)
    rows, found, tables = [], None, {}
    for d in degrees:
        table, t = fit(fn, fmt, d, inp)
        worst = max(t, key=t.get)
        check = verify(fn, fmt, table, inp)
        rows.append(
            {
                "degree": d,
                "t_star": t[worst],
                "worst_cell": int(worst),
                "proven_infeasible": t[worst] > 1.0,
                **check,
            }
        )
        if check["failures"] == 0:
            found = d
            tables[d] = table
            break
    return {
        "function": fn,
        "format": fmt,
        "degree": found,
        "shipped_degree": SHIPPED_DEGREE,
        "rows": rows,
        "tables": {d: t.tolist() for d, t in tables.items()},
    }


def render(results: list[dict]) -> str:
    """The markdown table: per function and format, each degree's t* and check (a degree
    above the lowest that passes is not tried: "-")."""
    head = " | ".join(f"degree {d}: t* (cell), failures" for d in DEGREES)
    lines = [
        f"| function | format | lowest degree | {head} |",
        "|---|---|---:|" + "---|" * len(DEGREES),
    ]
    for r in results:
        tried = {row["degree"]: row for row in r["rows"]}
        cells_ = [
            f"{tried[d]['t_star']:.3g} ({tried[d]['worst_cell']}), {tried[d]['failures']}"
            if d in tried
            else "-"
            for d in DEGREES
        ]
        lines.append(
            f"| {r['function']} | {r['format']} | {r['degree']} | " + " | ".join(cells_) + " |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- the specs

SPEC_KIND = "cells16"
SPEC_DIR = specmod.SPEC_DIR / specmod.SCHEMAS[SPEC_KIND].folder
COMMAND = specmod.SCHEMAS[SPEC_KIND].command
TABLE_FUNCTION = {"gelu": "gelu_none", "gelu_tanh": "gelu_tanh"}  # the kernels' table's names
# The cells forms (family_eval.h's CellForm) of each function's forward and matched derivative.
FORMS = {
    "gelu": ("XTimes", "Signed"),
    "gelu_tanh": ("XTimes", "Signed"),
    "sigmoid": ("HalfPlusOdd", "Even"),
    "tanh": ("Odd", "Even"),
    "silu": ("XHalfPlusOdd", "HalfPlusOdd"),
}
# Vector operations per element of each form around the cell's polynomial (family_eval.h's
# cells_eval): GELU's clamp below, clamp above and product; the family's |x| and clamp, then
# copysign (Odd), copysign and + 1/2 (HalfPlusOdd), and SiLU's clamp below and product too.
FORM_OPERATIONS = {"XTimes": 3, "Signed": 2, "Even": 2, "Odd": 3, "HalfPlusOdd": 4,
                   "XHalfPlusOdd": 6}  # fmt: skip


def operations(fn: str, degree: int, part: str = "forward") -> int:
    """Vector operations per element of a cells program (the 16-bit conversions aside): the
    cell's index (one multiply-add), degree + 1 table lookups (one two-table permute each on
    AVX-512), degree multiply-adds, and the form's own (``FORM_OPERATIONS``)."""
    if degree < 1:
        raise ValueError(f"a cells program has degree >= 1, got {degree}")
    form = FORMS[fn][0 if part == "forward" else 1]
    return 1 + (degree + 1) + degree + FORM_OPERATIONS[form]


# A refit may land on other float32 coefficients (the LP's solution to HiGHS's tolerance, from
# float64 targets whose last bits are the CPU's): it matches when both tables pass every input
# and their forwards lie within REFIT_GAP of the acceptance half-width of every input (the
# matched derivatives within REFIT_ATOL), the rest equal and the LP's t* within REFIT_RTOL.
REFIT_GAP = 0.05
REFIT_ATOL = 1e-6
REFIT_RTOL = 1e-4


# The (function, format) pairs with a program below the float32 one's degree: what the search
# finds (a refit that finds another set differs from the committed specs).
SIZED = (
    ("gelu", "bfloat16"),
    ("gelu_tanh", "bfloat16"),
    ("sigmoid", "bfloat16"),
    ("sigmoid", "float16"),
    ("tanh", "bfloat16"),
    ("tanh", "float16"),
    ("silu", "bfloat16"),
)


def spec_name(fn: str, fmt: str) -> str:
    return f"{TABLE_FUNCTION.get(fn, fn)}_{fmt}"


def spec_path(fn: str, fmt: str) -> Path:
    return specmod.spec_path(spec_name(fn, fmt), SPEC_KIND)


def matched_table(fn: str, forward: np.ndarray) -> np.ndarray:
    """The forward program's derivative, cell by cell, at the forward's degree (float32):
    sum (j+1) c_j v^j for GELU (x p) and SiLU (p + u p'), sum j c_j u^(j-1) for sigmoid and
    tanh (p'), the top row then zero."""
    f = forward.astype(F64)
    j = np.arange(f.shape[0], dtype=F64)[:, None]
    if fn in ("sigmoid", "tanh"):
        out = np.zeros_like(f)
        out[:-1] = f[1:] * j[1:]
    else:
        out = f * (j + 1)
    return out.astype(F32)


def replay_matched32(fn: str, x, table: np.ndarray) -> np.ndarray:
    """The matched derivative's float32 program (gradient 1)."""
    part = table_values(fn, table)
    if fn in ("gelu", "gelu_tanh"):
        return cells.backward32(x, part)
    return family_cells.eval32(x, part, FORMS[fn][1])


def _part(lay: dict, table: np.ndarray, errors: dict) -> dict:
    return {
        "scale": specmod.f32_hex(lay["scale"]),
        "clamp": specmod.f32_hex(lay["clamp"]),
        "offset": specmod.f32_hex(lay["offset"]),
        "table": [[specmod.f32_hex(v) for v in row] for row in table],
        "errors": errors,
    }


def build_spec(fn: str, fmt: str, result: dict | None = None) -> dict | None:
    """The spec of the format-sized program of (fn, fmt), or None where the search found
    none below the float32 program's degree."""
    r = search(fn, fmt) if result is None else result
    d = r["degree"]
    if d is None or d >= SHIPPED_DEGREE:
        return None
    lay = _layout(fn)
    fwd = np.asarray(r["tables"][d], F32)
    matched = matched_table(fn, fwd)
    x = report.all_finite(fmt)
    exact = report.reference_table(f"{fn}_grad", fmt)[2]
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(replay_matched32(fn, x, matched).astype(F64) - exact)
    row = next(row for row in r["rows"] if row["degree"] == d)
    fwd_errors = {k: row[k] for k in ("inputs", "failures", "max_ulp")}
    head = specmod.envelope(
        TABLE_FUNCTION.get(fn, fn), "cells", "accurate", specmod.FIT_ALL, specmod.CELLS16_PARTS
    )
    return {
        **head,
        "format": fmt,
        "degree": d,
        "cells": cells.CELLS,
        "forms": {"forward": FORMS[fn][0], "backward_matched": FORMS[fn][1]},
        "rule": (
            f"within 1 ulp of the correctly rounded value for x >= "
            f"{family_programs.ONE_ULP_FROM[fn]}, below |error| <= {ABS_BOUND} beyond "
            "half an ulp of the result"
        ),
        "search": [
            {k: row[k] for k in ("degree", "t_star", "worst_cell", "proven_infeasible", "failures")}
            for row in r["rows"]
        ],
        "forward": _part(lay, fwd, fwd_errors),
        "backward_matched": _part(lay, matched, {"max_abs_float32": float(np.nanmax(err))}),
    }


def part_table(part: dict) -> np.ndarray:
    return np.array([[specmod.from_hex(v) for v in row] for row in part["table"]], F32)


def refit_differences(old: dict, new: dict) -> list[str]:
    """Where a refit differs from the committed spec, by the rule above (REFIT_*)."""

    def bare(doc):
        out = {k: v for k, v in doc.items() if k not in ("search", *specmod.CELLS16_PARTS)}
        for p in specmod.CELLS16_PARTS:
            out[p] = {k: v for k, v in doc[p].items() if k not in ("table", "errors")}
        out["forward_errors"] = doc["forward"]["errors"]
        return out

    out = specmod.differences(bare(old), bare(new))
    sa, sb = old.get("search", []), new.get("search", [])

    # per degree tried: its outcome (the failures of a degree short of the rule only as "some":
    # their count follows the float32 rounding of a table that cannot pass anyway)
    def outcome(row):
        return (row["degree"], row["worst_cell"], row["proven_infeasible"], row["failures"] == 0)

    if [outcome(r) for r in sa] != [outcome(r) for r in sb]:
        out.append("search: the degrees' outcomes differ")
    elif any(
        not math.isclose(a["t_star"], b["t_star"], rel_tol=REFIT_RTOL)
        for a, b in zip(sa, sb, strict=True)
    ):
        out.append("search: t* differs")
    if out:
        return out
    fn = next(f for f in FUNCTIONS if TABLE_FUNCTION.get(f, f) == old["function"])
    inp = inputs(fn, old["format"])
    ta, tb = part_table(old["forward"]), part_table(new["forward"])
    if not np.array_equal(ta, tb):
        if (
            verify(fn, old["format"], ta, inp)["failures"]
            or verify(fn, old["format"], tb, inp)["failures"]
        ):
            out.append("forward.table: a table misses the rule")
        else:
            h = (inp.mhi - inp.mlo) / 2
            gap = np.abs(replay32(fn, inp.x, ta).astype(F64) - replay32(fn, inp.x, tb)) / h
            if not np.nanmax(gap) <= REFIT_GAP:
                out.append(f"forward.table: {np.nanmax(gap):.3g} of an input's margin apart")
    ma, mb = part_table(old["backward_matched"]), part_table(new["backward_matched"])
    if not np.array_equal(ma, mb):
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(
                replay_matched32(fn, inp.x, ma).astype(F64) - replay_matched32(fn, inp.x, mb)
            )
        if not np.nanmax(gap) <= REFIT_ATOL:
            out.append(f"backward_matched.table: {np.nanmax(gap):.3g} apart")
    ea = old["backward_matched"]["errors"]["max_abs_float32"]
    eb = new["backward_matched"]["errors"]["max_abs_float32"]
    if not math.isclose(ea, eb, rel_tol=0.05):
        out.append(f"backward_matched.errors.max_abs_float32: {ea:.3g} -> {eb:.3g}")
    return out


REFIT_RULE = (
    f"the search's outcomes, t* to {REFIT_RTOL:g}, forwards that pass every input within "
    f"{REFIT_GAP:g} of its margin, matched tables within {REFIT_ATOL:g}"
)


def _summary(doc: dict) -> str:
    e = doc["forward"]["errors"]
    return (
        f"degree {doc['degree']}, {e['failures']} of {e['inputs']} inputs outside the rule, "
        f"matched max {doc['backward_matched']['errors']['max_abs_float32']:.3e}"
    )


def main(argv=None) -> int:
    """The search's table, then the specs of SIZED written (or, --check, compared; cells.cli's
    flags)."""
    results = {(fn, fmt): search(fn, fmt) for fn in FUNCTIONS for fmt in FORMATS}
    print(render(list(results.values())))
    found = {k for k, r in results.items() if (r["degree"] or SHIPPED_DEGREE) < SHIPPED_DEGREE}
    status = 0
    if found != set(SIZED):
        print(
            f"error: the search found format-sized programs for {sorted(found)}, SIZED lists "
            f"{sorted(SIZED)}",
            file=sys.stderr,
        )
        status = 1
    texts = {
        spec_path(*k).name: (lambda k=k: specmod.dumps(build_spec(*k, results[k]), SPEC_KIND))
        for k in SIZED
        if k in found
    }
    return status | cells.cli(
        argv, COMMAND, __doc__, SPEC_DIR, texts, refit_differences, _summary, REFIT_RULE
    )


if __name__ == "__main__":
    sys.exit(main())
