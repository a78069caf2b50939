"""Best errors of the cell programs that op_costs.cpp times but the library does not ship.

Minimax fits in exact (float64) arithmetic, by linear programming on each cell (padded 1 %
like turbogelu/approx/cells.py), against exact GELU. Prints, for the shipped cell width
h = 1/scale unless said:
- cell 16 (around 0) without the final multiply: a cubic d1 x + d2 x^2 + d3 x^3 for gelu
  itself (no constant term, so that gelu(0) = 0 and tiny x keep their relative accuracy);
- the shipped form x * cubic on cells twice as wide (16-entry tables);
- a quadratic for gelu per cell of width h (three lookups instead of four).

    .venv/bin/python experiments/archive/cpu_op_costs/cell_errors.py      # a few seconds
"""

import numpy as np
from scipy.optimize import linprog

from turbogelu.approx import cells, reference


def minimax_error(xs: np.ndarray, powers: list[int]) -> float:
    """min over c of max |sum_j c_j x^p_j - gelu(x)| on xs."""
    ys = reference.gelu(xs, "none")
    v = np.stack([xs**p for p in powers], 1)
    ones = np.ones((len(xs), 1))
    a_ub = np.vstack([np.hstack([v, -ones]), np.hstack([-v, -ones])])
    res = linprog(
        np.r_[np.zeros(len(powers)), 1.0],
        A_ub=a_ub,
        b_ub=np.concatenate([ys, -ys]),
        bounds=[(None, None)] * (len(powers) + 1),
        method="highs",
    )
    assert res.success, res.message
    return float(res.x[-1])


def worst_cell(width: float, powers: list[int], points: int = 1025) -> float:
    """The largest per-cell minimax error over cells of ``width`` tiling [-5, 5]."""
    worst = 0.0
    for centre in np.arange(-5 + width / 2, 5, width):
        half = width / 2 * (1 + 2 * cells.PAD)
        worst = max(worst, minimax_error(np.linspace(centre - half, centre + half, points), powers))
    return worst


def main() -> None:
    h = 1 / float(cells.design()["scale"])
    lo, hi = cells.cell_interval(cells.CENTER, cells.design()["scale"])
    pad = cells.PAD * (hi - lo)
    around0 = np.linspace(lo - pad, hi + pad, 2049)
    print(f"cell width h = {h:.4f}")
    print(f"cell 16, cubic for gelu without constant:  {minimax_error(around0, [1, 2, 3]):.3e}")
    print(f"cells of width 2h, shipped form x * cubic: {worst_cell(2 * h, [1, 2, 3, 4]):.3e}")
    print(f"cells of width h, quadratic for gelu:      {worst_cell(h, [0, 1, 2]):.3e}")


if __name__ == "__main__":
    main()
