"""Float16 forwards in half-precision arithmetic (issue 41, item 2): programs for CPUs with
AVX512-FP16, whose every operation rounds to float16, proven on every input, for GELU (both
forms), sigmoid, tanh and SiLU.

The shipped float16 forwards widen each input to float32, run a float32 cells program (GELU:
a cubic per cell, 11 operations per 16 lanes) and round back. A CPU with AVX512-FP16 (the
Sapphire Rapids-class Xeon) computes on 32 float16 lanes per instruction and needs neither
conversion. The obstacle is accuracy: every step rounds to 11 bits, and the rule is within 1
ulp of the correctly rounded value (below x = -3, where the rule says so: |error| <= 3e-5
beyond half an ulp). A product form x * P(x) needs P to be the correctly rounded Phi(x)
nearly everywhere (one ulp off: thousands of GELU's inputs out, ``product_form_misses``), so
the programs keep the rounding of every step small against the result's ulp:

* 32 cells 1/scale wide (k = trunc(scale xc + offset), no clamp of k needed: xc <= ``high``
  keeps k <= 31), over xb = max(x, low) and xc = min(xb, high) (``Layout``, ``LAYOUTS``);
* y = fma(m, a_k, fma(t, Q_k(t), c0_k)) with t = xc - origin_k, Q_k by Horner and m = xb
  (xc for the bounded functions, whose a = 0 tails must not meet an infinite x); the
  per-cell numbers (origin, a, c0, q0..) are looked up by one 32-entry word permute each;
* "value" cells: a = 0, the origin is the cell's float16 input whose value lies nearest a
  float16 value, c0 that value, so the last fma adds a small correction to an almost exact
  constant (and t = xc - origin is exact, Sterbenz, except in sigmoid's cells next to 0);
  "band" cells (GELU: from x = -3/8 up; the family: near 0): origin 0 and y = a x + c0 +
  x Q(x) with a, c0 the layout's (GELU x/2 + x Q, Q ~ Phi - 1/2), so the rounding of x Q is
  small against the rest;
* cell 0 and cell 31 are constant tails: GELU and SiLU -0 below (the function is negative,
  within the tail's bound) and x above; sigmoid 0 and 1; tanh -1 and 1.

15 operations per 32 lanes with a quadratic Q (``operations``; SiLU, whose cells are wider,
a cubic: 17), against 26 for GELU's widened float32 program. The coefficients are a
least-squares fit per cell rounded to float16 (where that misses an input, the cell's
coefficients moved a few float16 steps: ``_nudge``); the proof is the replay (``replay``):
every operation of the kernel in float16 round-to-nearest-even, the fused multiply-adds
exactly rounded (``fma16``), checked on every finite float16 input against the rule
(``verify``), with the special values as the function has them (``SPECIALS``).
No kernel runs them yet: ``experiments/archive/cpu_op_costs/op_costs_half.cpp`` and the
benchmark's probe (``kernels/bench/half_probe.cpp``) run GELU's with intrinsics, check their
bits against ``replay`` on every 16-bit pattern and time it.

    python -m turbogelu.approx.half16          # GELU's table, its proof and degree 1's failures
    python -m turbogelu.approx.half16 --fn F   # F: gelu_tanh, sigmoid, tanh or silu
    python -m turbogelu.approx.half16 --bin P  # and the table's float16 bits, column-major, to P

numpy (and scipy's ndtr for ``product_form_misses``); seconds.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass

import numpy as np

from . import cells16

H = np.float16
F64 = np.float64
CELLS = 32
DEGREE = 2
NUDGE = 2  # float16 steps each coefficient may move to mend a cell (_nudge)
COLUMNS = ("origin", "a", "c0", "q0", "q1", "q2")
ZERO_CELL, IDENTITY_CELL = 0, CELLS - 1  # GELU's constant tails: -0 and x


@dataclass(frozen=True)
class Layout:
    """Where a function's cells lie, and its fixed cells.

    Cells 1..30 cover [lo, lo + 30 / scale) a 1/scale wide (scale = CELLS / (hi - lo) in
    float16), cell 0 everything below (xb = max(x, low) with low one cell under lo) and cell
    31 everything above. Cells whose inputs meet ``band`` take the band form (origin 0,
    y = a x + c0 + x Q(x)), the others the value form. ``first`` and ``last``: (origin, a, c0)
    of the two tail cells, whose Q is 0. A bounded function (sigmoid, tanh: constant tails)
    multiplies a by xc, so that a = 0 never meets an infinite x."""

    lo: float
    hi: float
    band: tuple[float, float]
    a: float
    c0: float
    first: tuple[float, float, float]
    last: tuple[float, float, float]
    degree: int = DEGREE
    bounded: bool = False  # the last fma multiplies a by xc (clamped both ways), not xb

    @property
    def scale(self) -> float:
        return float(H(CELLS / (self.hi - self.lo)))

    @property
    def offset(self) -> float:
        return float(H(1 - self.lo * self.scale))

    @property
    def low(self) -> float:
        return float(H(self.lo - 1 / self.scale))


_GELU = Layout(-4.375, 3.625, (-0.375, np.inf), 0.5, -0.0, (-4.375, 0.0, -0.0), (0.0, 1.0, 0.0))
# Per function (names of rounding.FUNCTIONS). GELU: cells from -3/8 up take x/2 + x Q(x); cell
# 0 (x < -4.375) is -0 (t = xc + 4.375 < 0 makes t * (+0) = -0) and cell 31 (x >= 3.125) is x.
# The family: sigmoid's band is the cell of 0 (1/2 + x Q), tanh's and SiLU's the cells within
# 0.3 of it (x + x Q, x/2 + x Q); their tails are the asymptotes (SiLU's lower one -0 as
# GELU's). SiLU's cells are wider (its range is): a cubic Q.
LAYOUTS = {
    "gelu": _GELU,
    "gelu_tanh": _GELU,
    "sigmoid": Layout(
        -10.5, 8.5, (0.0, 0.0), 0.0, 0.5, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), bounded=True
    ),
    "tanh": Layout(
        -4.5, 4.8, (-0.3, 0.3), 1.0, -0.0, (0.0, 0.0, -1.0), (0.0, 0.0, 1.0), bounded=True
    ),
    "silu": Layout(-14.0, 9.0, (-0.3, 0.3), 0.5, -0.0, (-14.0, 0.0, -0.0), (0.0, 1.0, 0.0), 3),
}
FUNCTIONS = tuple(LAYOUTS)
# The special values each function's program must give, bit for bit: f(inf), f(-inf), f(+0),
# f(-0) (a NaN gives a NaN everywhere).
SPECIALS = {
    "gelu": (np.inf, -0.0, 0.0, -0.0),
    "gelu_tanh": (np.inf, -0.0, 0.0, -0.0),
    "sigmoid": (1.0, 0.0, 0.5, 0.5),
    "tanh": (1.0, -1.0, 0.0, -0.0),
    "silu": (np.inf, -0.0, 0.0, -0.0),
}
# GELU's layout as module constants (the benchmark's probe takes them: experiments/probes.py).
SCALE, OFFSET, LOW = _GELU.scale, _GELU.offset, _GELU.low


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


def _layout(fn: str) -> Layout:
    if fn not in LAYOUTS:
        raise ValueError(f"fn must be one of {FUNCTIONS}, got {fn!r}")
    return LAYOUTS[fn]


def high(fn: str = "gelu") -> np.float16:
    """The largest float16 h with fl16(scale h + offset) < CELLS: xc's clamp keeps k <= 31."""
    lay = _layout(fn)
    h = H(CELLS - lay.offset) / H(lay.scale)
    while fma16(h, H(lay.scale), H(lay.offset)) >= CELLS:
        h = np.nextafter(h, H(0))
    return H(h)


def _clamped(x, fn: str = "gelu"):
    """(xb, xc, k) as the kernel forms them: max and min keep a NaN (the kernel passes x as
    the second operand, which AVX-512 returns when either is NaN); a NaN's k is 0 (the
    integer indefinite 0x8000, whose low five bits a 32-entry permute reads)."""
    lay = _layout(fn)
    x = np.asarray(x, H)
    nan = np.isnan(x)
    xb = np.where(nan, x, np.maximum(x, H(lay.low)))
    xc = np.where(nan, x, np.minimum(xb, high(fn)))
    f = fma16(xc, H(lay.scale), H(lay.offset))
    k = np.where(np.isnan(f), 0, np.nan_to_num(f)).astype(np.int64) & (CELLS - 1)
    return xb, xc, k


def replay(x, table: np.ndarray, fn: str = "gelu") -> np.ndarray:
    """fn's program (its layout, this table) on float16 inputs, operation by operation in
    float16."""
    xb, xc, k = _clamped(x, fn)
    row = np.asarray(table, H)[k]
    t = sub16(xc, row[:, 0])
    q = row[:, -1]
    for j in range(row.shape[1] - 2, 2, -1):  # Horner down to q0 (column 3)
        q = fma16(t, q, row[:, j])
    return fma16(xc if _layout(fn).bounded else xb, row[:, 1], fma16(t, q, row[:, 2]))


def _value_origin(xs: np.ndarray, exact: np.ndarray) -> float:
    """A float16 input of the cell (in its middle third) whose function value lies nearest a
    float16 value, in that value's ulps: c0 is then almost exact."""
    order = np.argsort(np.abs(xs.astype(F64) - (float(xs.min()) + float(xs.max())) / 2))
    near = order[: max(8, xs.size // 3)]
    c = exact[near].astype(H).astype(F64)
    ulp = np.abs(np.nextafter(exact[near].astype(H), H(np.inf)).astype(F64) - c)
    return float(xs[near[np.argmin(np.abs(exact[near] - c) / ulp)]])


def fit(degree: int | None = None, fn: str = "gelu", nudge: bool = True) -> np.ndarray:
    """The table (CELLS rows of float16: origin, a, c0, q0..q_degree; degree: the layout's
    unless given), a least-squares fit per cell to fn (``FUNCTIONS``: GELU's two forms,
    sigmoid, tanh, SiLU) on the cell's float16 inputs, rounded to float16; with ``nudge``,
    cells whose rounded coefficients miss the rule on some input get them moved a few float16
    steps (``_nudge``)."""
    lay = _layout(fn)
    degree = lay.degree if degree is None else degree
    x, _, _ = cells16.accepted(fn, "float16")
    exact = _exact(fn)
    xh = x.astype(H)
    _, _, k = _clamped(xh, fn)
    inside = (xh >= H(lay.low)) & (xh <= high(fn))
    table = np.zeros((CELLS, 4 + degree), H)
    table[0, :3], table[CELLS - 1, :3] = lay.first, lay.last
    for cell in range(1, CELLS - 1):
        m = (k == cell) & inside
        xs, ex = xh[m], exact[m]
        lo, hi = float(xs.min()), float(xs.max())
        band = lo <= lay.band[1] and hi >= lay.band[0]
        if band:  # a x + c0 + x Q(x)
            origin, a, c0 = 0.0, lay.a, lay.c0
        else:  # c0 + t Q(t) about an origin with an almost exact value
            origin = _value_origin(xs, ex)
            a, c0 = 0.0, float(H(ex[xs == H(origin)][0]))
        t = xs.astype(F64) - origin
        keep = t != 0
        target = (ex[keep] - a * t[keep] - c0) / t[keep]
        powers = np.stack([t[keep] ** j for j in range(degree + 1)], axis=1)
        if band and c0 == 0 and lo <= 0 <= hi:
            # the cell of x = 0 where f(0) = 0: no constant in Q, so that -0 keeps its sign
            q = np.r_[0.0, np.linalg.lstsq(powers[:, 1:], target, rcond=None)[0]]
        else:
            q = np.linalg.lstsq(powers, target, rcond=None)[0]
        table[cell] = np.r_[origin, a, c0, q].astype(H)
    return _nudge(table, fn) if nudge else table


def _misses(table: np.ndarray, fn: str, cell: int | None = None) -> np.ndarray:
    """Which finite inputs (of one cell, if given) the replay puts out of fn's rule."""
    from . import rounding

    x, jlo, jhi = cells16.accepted(fn, "float16")
    xh = x.astype(H)
    if cell is not None:
        m = _clamped(xh, fn)[2] == cell
        xh, jlo, jhi = xh[m], jlo[m], jhi[m]
    j = rounding.to_ordered(replay(xh, table, fn).astype(np.float32), "float16")
    return (j < jlo) | (j > jhi)


def _nudge(table: np.ndarray, fn: str, reach: int = NUDGE) -> np.ndarray:
    """Where the rounded least-squares coefficients miss the rule on some input of a cell,
    the same cell with its polynomial's coefficients moved by up to ``reach`` float16 steps
    each (the smallest total move first) until the cell keeps the rule on all its inputs;
    a cell no move mends is left as fitted (``verify`` reports it)."""
    table = table.copy()
    x = cells16.accepted(fn, "float16")[0].astype(H)
    cells_out = sorted({int(c) for c in _clamped(x[_misses(table, fn)], fn)[2]})
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


def _exact(fn: str) -> np.ndarray:
    from . import report

    return report.reference_table(fn, "float16")[2]


def verify(table: np.ndarray, fn: str = "gelu") -> dict:
    """The replay on every finite float16 input against fn's rule (``cells16.accepted``), and
    on the special values (``SPECIALS``, signs of zeros included; NaN gives NaN)."""
    _layout(fn)
    x, jlo, jhi = cells16.accepted(fn, "float16")
    from . import rounding

    y = replay(x.astype(H), table, fn)
    j = rounding.to_ordered(y.astype(np.float32), "float16")
    bad = (j < jlo) | (j > jhi)
    ys = replay(np.array([np.inf, -np.inf, 0.0, -0.0, np.nan], H), table, fn)
    want = np.array(SPECIALS[fn], H)
    specials_ok = bool((ys[:4].view(np.uint16) == want.view(np.uint16)).all() and np.isnan(ys[4]))
    return {
        "inputs": int(x.size),
        "failures": int(bad.sum()),
        "failing_cells": sorted({int(c) for c in _clamped(x[bad].astype(H), fn)[2]}),
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
    degree = _layout(fn).degree
    table = fit(fn=fn)
    for d in range(1, degree + 1):
        r = verify(table if d == degree else fit(d, fn), fn)
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
    lay = _layout(fn)
    print(
        f"scale {lay.scale}, offset {lay.offset}, low {lay.low}, high {float(high(fn))!r};"
        f" table (origin, a, c0, q0..q{table.shape[1] - 4}):"
    )
    for cell, row in enumerate(table):
        print(f"  {cell:2d} " + " ".join(f"{float(v): .6g}" for v in row))
    if "--bin" in argv:
        path = argv[argv.index("--bin") + 1]
        np.ascontiguousarray(table.T).view(np.uint16).tofile(path)
        print(f"wrote {path}: {table.shape[1]} columns of {CELLS} float16 bits")
    return 0 if verify(table, fn)["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
