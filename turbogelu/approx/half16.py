"""GELU's float16 forward in half-precision arithmetic (issue 41, item 2): a program for
CPUs with AVX512-FP16, whose every operation rounds to float16, proven on every input.

The shipped float16 forward widens each input to float32, runs the float32 cells program
(a cubic per cell: 11 operations per 16 lanes) and rounds back. A CPU with AVX512-FP16
(the Sapphire Rapids-class Xeon) computes on 32 float16 lanes per instruction and needs
neither conversion. The obstacle is accuracy: every step rounds to 11 bits, and the rule is
within 1 ulp of the correctly rounded GELU (below x = -3: |error| <= 3e-5 beyond half an
ulp). A product form x * P(x) needs P to be the correctly rounded Phi(x) nearly everywhere
(one ulp off: thousands of inputs out, ``product_form_misses``), so the program keeps the
rounding of every step small against the result's ulp:

* 32 cells of width 1/4 (k = trunc(4 xc + 18.5), no clamp of k needed: xc < HIGH keeps
  k <= 31), over xb = max(x, LOW) and xc = min(xb, HIGH);
* y = fma(xb, a_k, fma(t, Q_k(t), c0_k)) with t = xc - origin_k and Q_k of degree DEGREE by
  Horner, all six per-cell numbers (origin, a, c0, q0..q2) looked up by one 32-entry word
  permute each;
* cells below x = -3/8 (cell ``G_FROM``) are "value" cells: a = 0, the origin is a float16
  value of the cell whose GELU lies nearest a float16 value, c0 that value, so the last fma
  adds a small correction to an almost exact constant and t = xc - origin is exact
  (Sterbenz); cells from ``G_FROM`` on are "half" cells: origin 0, a = 1/2, c0 = -0, and
  Q ~ Phi(x) - 1/2, so y = x/2 + (x Q): the rounding of x Q is small against x/2;
* cell 0 (x < -4.375) gives -0 (|GELU| < 2.7e-5 there, within the tail's bound), cell 31
  (x >= 3.125) gives x: a = 1, Q = 0.

15 operations per 32 lanes (``operations``), against 26 for the widened float32 program.
The coefficients are a least-squares fit per cell rounded to float16 (where that misses an
input, the cell's coefficients moved a few float16 steps: ``_nudge``); the proof is the
replay (``replay``): every operation of the kernel in float16 round-to-nearest-even, the
fused multiply-adds exactly rounded (``fma16``), checked on every finite float16 input
against the rule (``verify``), with the special values as the function has them.
A kernel has not been written yet: ``experiments/archive/cpu_op_costs/op_costs_half.cpp``
runs this program's loop with intrinsics, checks its bits against ``replay`` on every
16-bit pattern and times it against a streaming copy.

    python -m turbogelu.approx.half16          # the table, its proof and degree 1's failures
    python -m turbogelu.approx.half16 --bin F  # and the table's float16 bits, column-major, to F
    python -m turbogelu.approx.half16 --fn gelu_tanh   # PyTorch's tanh form (the same layout)

numpy (and scipy's ndtr for ``product_form_misses``); about a second.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from . import cells16

H = np.float16
F64 = np.float64
SCALE = 4.0
OFFSET = 18.5
CELLS = 32
LOW = -4.625  # xb = max(x, LOW): 4 LOW + OFFSET = 0, cell 0
G_FROM = 17  # the first "half" cell: [-0.375, -0.125)
DEGREE = 2
NUDGE = 2  # float16 steps each coefficient may move to mend a cell (_nudge)
COLUMNS = ("origin", "a", "c0", "q0", "q1", "q2")
FUNCTIONS = ("gelu", "gelu_tanh")  # GELU's two forms, by their names in rounding.FUNCTIONS
ZERO_CELL, IDENTITY_CELL = 0, CELLS - 1


def fma16(a, b, c) -> np.ndarray:
    """fl16(a b + c) of float16 arrays, rounded once (the hardware's fused multiply-add).

    The product of two float16 values is exact in float64; the sum's rounding error is
    recovered (TwoSum) so that a float16 tie hidden by the float64 rounding goes the way the
    exact sum does."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.asarray(a, H).astype(F64) * np.asarray(b, H).astype(F64)
        c = np.asarray(c, H).astype(F64)
        s = p + c
        bb = s - p
        e = (p - (s - bb)) + (c - bb)
        r = s.astype(H)
        toward = np.nextafter(s, np.where(e > 0, np.inf, -np.inf))
        fix = np.isfinite(s) & (e != 0) & (toward.astype(H) != r)
        return np.where(fix, toward.astype(H), r)


def sub16(a, b) -> np.ndarray:
    """fl16(a - b): exact in float64, then rounded once."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(a, H).astype(F64) - np.asarray(b, H).astype(F64)).astype(H)


def high() -> np.float16:
    """The largest float16 h with fl16(SCALE h + OFFSET) < CELLS: xc's clamp keeps k <= 31."""
    h = H(CELLS - OFFSET) / H(SCALE)
    while fma16(h, H(SCALE), H(OFFSET)) >= CELLS:
        h = np.nextafter(h, H(0))
    return H(h)


def _clamped(x):
    """(xb, xc, k) as the kernel forms them: max and min keep a NaN (the kernel passes x as
    the second operand, which AVX-512 returns when either is NaN); a NaN's k is 0 (the
    integer indefinite 0x8000, whose low five bits a 32-entry permute reads)."""
    x = np.asarray(x, H)
    nan = np.isnan(x)
    xb = np.where(nan, x, np.maximum(x, H(LOW)))
    xc = np.where(nan, x, np.minimum(xb, high()))
    f = fma16(xc, H(SCALE), H(OFFSET))
    k = np.where(np.isnan(f), 0, np.nan_to_num(f)).astype(np.int64) & (CELLS - 1)
    return xb, xc, k


def replay(x, table: np.ndarray) -> np.ndarray:
    """The program on float16 inputs, operation by operation in float16."""
    xb, xc, k = _clamped(x)
    row = np.asarray(table, H)[k]
    t = sub16(xc, row[:, 0])
    q = row[:, -1]
    for j in range(row.shape[1] - 2, 2, -1):  # Horner down to q0 (column 3)
        q = fma16(t, q, row[:, j])
    return fma16(xb, row[:, 1], fma16(t, q, row[:, 2]))


def _value_origin(xs: np.ndarray, exact: np.ndarray) -> float:
    """A float16 input of the cell (in its middle third) whose GELU lies nearest a float16
    value, in that value's ulps: c0 is then almost exact."""
    order = np.argsort(np.abs(xs.astype(F64) - (float(xs.min()) + float(xs.max())) / 2))
    near = order[: max(8, xs.size // 3)]
    c = exact[near].astype(H).astype(F64)
    ulp = np.abs(np.nextafter(exact[near].astype(H), H(np.inf)).astype(F64) - c)
    return float(xs[near[np.argmin(np.abs(exact[near] - c) / ulp)]])


def fit(degree: int = DEGREE, fn: str = "gelu", nudge: bool = True) -> np.ndarray:
    """The table (CELLS rows of float16: origin, a, c0, q0..q_degree), a least-squares fit per
    cell to GELU (fn: "gelu", or "gelu_tanh" for PyTorch's tanh form) on the cell's float16
    inputs, rounded to float16; with ``nudge``, cells whose rounded coefficients miss the rule
    on some input get them moved a few float16 steps (``_nudge``)."""
    _check_fn(fn)
    x, _, _ = cells16.accepted(fn, "float16")
    exact = _exact(fn)
    xh = x.astype(H)
    _, _, k = _clamped(xh)
    inside = xh >= H(LOW)
    table = np.zeros((CELLS, 4 + degree), H)
    for cell in range(CELLS):
        m = (k == cell) & inside
        xs, ex = xh[m], exact[m]
        if cell == ZERO_CELL:  # -0: t = xc + 4.375 < 0 makes t * (+0) = -0, and c0 = -0
            table[cell, :3] = (-4.375, 0.0, -0.0)
            continue
        if cell == IDENTITY_CELL:
            table[cell, :3] = (0.0, 1.0, 0.0)
            continue
        if cell >= G_FROM:  # x/2 + x Q(x): Q ~ Phi(x) - 1/2
            origin, a, c0 = 0.0, 0.5, -0.0
            t = xs.astype(F64)
            keep = t != 0
            target = np.zeros_like(t)
            target[keep] = ex[keep] / t[keep] - 0.5
        else:  # c0 + t Q(t) about an origin with an almost exact GELU
            origin = _value_origin(xs, ex)
            a, c0 = 0.0, float(H(ex[xs == H(origin)][0]))
            t = xs.astype(F64) - origin
            keep = t != 0
            target = np.zeros_like(t)
            target[keep] = (ex[keep] - c0) / t[keep]
        powers = np.stack([t[keep] ** j for j in range(degree + 1)], axis=1)
        if cell >= G_FROM and xs.min() <= 0 <= xs.max():
            # the cell of x = 0: no constant (Phi(0) - 1/2 = 0), so that -0 keeps its sign
            q = np.r_[0.0, np.linalg.lstsq(powers[:, 1:], target[keep], rcond=None)[0]]
        else:
            q = np.linalg.lstsq(powers, target[keep], rcond=None)[0]
        table[cell] = np.r_[origin, a, c0, q].astype(H)
    return _nudge(table, fn) if nudge else table


def _misses(table: np.ndarray, fn: str, cell: int | None = None) -> np.ndarray:
    """Which finite inputs (of one cell, if given) the replay puts out of fn's rule."""
    from . import rounding

    x, jlo, jhi = cells16.accepted(fn, "float16")
    xh = x.astype(H)
    if cell is not None:
        m = _clamped(xh)[2] == cell
        xh, jlo, jhi = xh[m], jlo[m], jhi[m]
    j = rounding.to_ordered(replay(xh, table).astype(np.float32), "float16")
    return (j < jlo) | (j > jhi)


def _nudge(table: np.ndarray, fn: str, reach: int = NUDGE) -> np.ndarray:
    """Where the rounded least-squares coefficients miss the rule on some input of a cell,
    the same cell with its polynomial's coefficients moved by up to ``reach`` float16 steps
    each (the smallest total move first) until the cell keeps the rule on all its inputs;
    a cell no move mends is left as fitted (``verify`` reports it)."""
    table = table.copy()
    cells_out = sorted({int(c) for c in _clamped(cells16.accepted(fn, "float16")[0][
        _misses(table, fn)].astype(H))[2]})  # fmt: skip
    steps = range(-reach, reach + 1)
    moves = sorted(
        itertools.product(steps, repeat=table.shape[1] - 3), key=lambda m: sum(map(abs, m))
    )
    for cell in cells_out:
        base = table[cell].copy()
        for move in moves[1:]:
            row = base.copy()
            for j, d in enumerate(move):
                for _ in range(abs(d)):
                    row[3 + j] = np.nextafter(row[3 + j], H(np.inf if d > 0 else -np.inf))
            table[cell] = row
            if not _misses(table, fn, cell).any():
                break
        else:
            table[cell] = base
    return table


def _check_fn(fn: str) -> None:
    if fn not in FUNCTIONS:
        raise ValueError(f"fn must be one of {FUNCTIONS}, got {fn!r}")


def _exact(fn: str) -> np.ndarray:
    from . import report

    return report.reference_table(fn, "float16")[2]


def verify(table: np.ndarray, fn: str = "gelu") -> dict:
    """The replay on every finite float16 input against fn's rule (``cells16.accepted``), and
    on the special values."""
    _check_fn(fn)
    x, jlo, jhi = cells16.accepted(fn, "float16")
    from . import rounding

    y = replay(x.astype(H), table)
    j = rounding.to_ordered(y.astype(np.float32), "float16")
    bad = (j < jlo) | (j > jhi)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], H)
    ys = replay(special, table)
    specials_ok = bool(
        ys[0] == np.inf
        and ys[1] == 0 and np.signbit(ys[1])
        and np.isnan(ys[2])
        and ys[3] == 0 and not np.signbit(ys[3])
        and ys[4] == 0 and np.signbit(ys[4])
    )  # fmt: skip
    return {
        "inputs": int(x.size),
        "failures": int(bad.sum()),
        "failing_cells": sorted({int(c) for c in _clamped(x[bad].astype(H))[2]}),
        "specials_ok": specials_ok,
    }


def product_form_misses() -> dict[int, int]:
    """Why not ``x P(x)``: with P = Phi(x) correctly rounded to float16 and then moved by
    d = -1, 0, +1 ulps, how many finite inputs fl16(x P) puts out of the rule, per d. A
    product form's P must be the correctly rounded Phi almost everywhere, more than a
    float16 evaluation of P can promise."""
    from scipy.special import ndtr

    from . import rounding

    x, jlo, jhi = cells16.accepted("gelu", "float16")
    phi = ndtr(x.astype(F64)).astype(H)
    out = {}
    for d in (-1, 0, 1):
        p = phi
        for _ in range(abs(d)):
            p = np.nextafter(p, H(np.inf if d > 0 else -np.inf))
        with np.errstate(over="ignore"):
            y = (x.astype(F64) * p.astype(F64)).astype(H)
        j = rounding.to_ordered(y.astype(np.float32), "float16")
        out[d] = int(((j < jlo) | (j > jhi)).sum())
    return out


def operations(degree: int = DEGREE) -> int:
    """Vector operations per 32 float16 lanes: max, min, fma and truncation (the cell), one
    permute per column, t, degree Horner steps, and the two last fmas."""
    return 4 + (4 + degree) + 1 + degree + 2


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fn = argv[argv.index("--fn") + 1] if "--fn" in argv else "gelu"
    _check_fn(fn)
    table = fit(fn=fn)
    for d in range(1, DEGREE + 1):
        r = verify(table if d == DEGREE else fit(d, fn), fn)
        print(
            f"{fn}, degree {d} (y of degree {d + 1} per cell): {operations(d)} operations per 32"
            f" lanes, {r['failures']} of {r['inputs']} inputs out of the rule"
            f" (cells {r['failing_cells']}), special values {'ok' if r['specials_ok'] else 'WRONG'}"
        )
    if fn == "gelu":
        misses = product_form_misses()
        print(
            "x P(x) with P = Phi(x) correctly rounded, -1 / 0 / +1 ulp: "
            + " / ".join(str(misses[d]) for d in (-1, 0, 1))
            + " inputs out of the rule"
        )
    print(f"HIGH = {float(high())!r}; table ({', '.join(COLUMNS)}):")
    for cell, row in enumerate(table):
        print(f"  {cell:2d} " + " ".join(f"{float(v): .6g}" for v in row))
    if "--bin" in argv:
        path = argv[argv.index("--bin") + 1]
        np.ascontiguousarray(table.T).view(np.uint16).tofile(path)
        print(f"wrote {path}: {table.shape[1]} columns of {CELLS} float16 bits")
    return 0 if verify(table, fn)["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
