"""The paper's Table 2 (five activation approximations, bfloat16 coefficients), reproduced and
improved, with the real-coefficient floor of each form and Sollya's fpminimax as a control.

The paper gives, per row, a function, a "degree" (D3/D4/D5) and a reduction, and the max abs
error (x1e-3) of two fits with bfloat16 coefficients in real arithmetic: endpoint-constrained
least squares ("LS") and Sollya's fpminimax ("Sollya"). It does not give the fit interval
L_i, the clamp L_c, the evaluation variable or how the coefficients were rounded. Here:

* ``Row.ls``: a form and (L_i, L_c) at which ``endpoint-ls`` with bf16 coefficients gives the
  paper's LS number within 5 % (found by scanning L_i on a 1/16 grid and L_c on a 1/32 grid;
  ``experiments/table2_research/`` has the wider search over readings of "Dk"). For SiLU and
  sigmoid' that number is the clamp's own tail error |f - asymptote| at L_c: the paper's LS
  errors there are decided by where it clamps, not by the polynomial.
* ``Row.best``: our result, ``remez+search`` (minimax, coefficients rounded to bf16, then the
  neighbour search of ``methods.search_rounded``) at the (L_i, L_c) found by
  ``search.grid_search`` (the grid is recorded in ``Row.best_grid``; ``pytest -m slow
  tests/test_table2.py`` reruns it).
* ``floor(config)``: the smallest max error any real-coefficient polynomial of the form can
  reach, over every clamp: bracketed between a lower bound (Remez' levelled error, a lower
  bound of the minimax error on [0, a] by de la Vallee Poussin, combined over each clamp cell
  [a, b] with the tail error at b: the window error only grows with L_c and the tail error
  only shrinks) and the best value found on the clamp grid.
* ``sollya_control(config)``: fpminimax (bf16 coefficients, monomials in u or u^2) on
  [0, L_c] for the same form, its error then measured by our own error model (the tail
  included). A control only: Sollya's figures never enter a reference comparison.

Errors are those of ``family_fit.ErrorModel``: the whole program (polynomial inside the
clamp, asymptote beyond) in real arithmetic on a dense grid (step 2^-10) of [0, max(8,
1.5 L_c)], standing for [-X, X].
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from . import methods
from .family_fit import ErrorModel, fit_polyspec
from .polyspec import PolySpec

# Each target's residual (targets.TARGETS[...].residual, u >= 0) as a Sollya expression in x;
# tests/test_table2.py evaluates these strings with numpy and compares them with the targets.
SOLLYA_RESIDUALS = {
    "sigmoid": "1/(1+exp(-x)) - 1/2",
    "tanh": "tanh(x)",
    "silu": "x/(1+exp(-x)) - x/2",
    "gelu": "x*erf(x/sqrt(2))/2",
    "sigmoid_grad": "exp(-x)/(1+exp(-x))^2",
}


@dataclass(frozen=True)
class Config:
    """One form (as ``PolySpec``: target, variable u = |x| or y = x^2, factor u^factor,
    degree, shift to z in [-1, 1]) at one fit interval and clamp."""

    target: str
    variable: str
    factor: int
    degree: int
    shift: bool
    fit_interval: float
    clamp: float

    def fit(self, method: str, fmt: str = "bfloat16", **opts) -> PolySpec:
        return fit_polyspec(
            self.target,
            self.variable,
            self.factor,
            self.degree,
            self.fit_interval,
            self.clamp,
            fmt,
            method,
            shift=self.shift,
            replay=False,
            **opts,
        )

    def form(self) -> str:
        """Human-readable form, e.g. ``x/2 + u^2 P5(z(u))``."""
        red = PolySpec.template(self.target, self.degree, self.fit_interval).tgt.reduction
        var = "u" if self.variable == "u" else "u^2"
        arg = f"z({var})" if self.shift else var
        pre = {0: "", 1: "u ", 2: "u^2 "}.get(self.factor, f"u^{self.factor} ")
        poly = f"{pre}P{self.degree}({arg})"
        base = {"x/2 + even": "x/2 + ", "1/2 + odd": "1/2 + sign(x) ", "odd": "sign(x) "}
        return base.get(red, "") + poly

    def at(self, clamp: float, fit_interval: float | None = None) -> Config:
        """The same form at another clamp (and fit interval, if given)."""
        fi = self.fit_interval if fit_interval is None else float(fit_interval)
        return dataclasses.replace(self, clamp=float(clamp), fit_interval=fi)


@dataclass(frozen=True)
class Row:
    """One row of the paper's Table 2 and our configurations for it (module docstring)."""

    name: str
    paper_form: str
    paper_ls: float
    paper_sollya: float
    ls: Config
    best: Config
    best_grid: tuple[str, str]  # search.parse_values texts of L_i and L_c
    floor_clamps: tuple[float, float]  # the clamp range scanned for the floor
    more_forms: tuple[Config, ...] = ()  # other forms whose floors are recorded


def _c(target, variable, factor, degree, shift, li, lc) -> Config:
    return Config(target, variable, factor, degree, shift, li, lc)


ROWS: tuple[Row, ...] = (
    Row(
        "sigmoid D3",
        "1/2 + odd",
        5.44e-3,
        5.47e-3,
        ls=_c("sigmoid", "u", 0, 3, False, 6.5, 5.21875),
        best=_c("sigmoid", "u", 0, 3, False, 5.06, 5.44),
        best_grid=("4.9:5.2:0.02", "5.3:5.6:0.02"),
        floor_clamps=(4.5, 6.5),
    ),
    Row(
        "tanh D4",
        "odd",
        9.61e-3,
        7.22e-3,
        ls=_c("tanh", "u", 0, 4, True, 2.625, 2.6875),
        best=_c("tanh", "u", 0, 4, False, 2.86, 2.85),
        best_grid=("2.7:3.0:0.02", "2.75:2.95:0.02"),
        floor_clamps=(2.3, 3.4),
    ),
    Row(
        "SiLU D3",
        "x/2 + even",
        21.74e-3,
        19.95e-3,
        # "D3" does not fit SiLU: a degree-3 polynomial in u has a floor of 26.7e-3, above
        # both paper numbers. An even polynomial of degree 8 (degree 4 in u^2) fits the LS
        # column, whose value is the clamp's tail error at L_c.
        ls=_c("silu", "y", 0, 4, True, 5.4375, 5.53125),
        best=_c("silu", "y", 0, 4, True, 5.9, 5.9),
        best_grid=("5.4:6.4:0.1", "5.5:6.5:0.1"),
        floor_clamps=(5.0, 6.8),
        more_forms=(_c("silu", "u", 0, 3, False, 5.0, 5.0),),
    ),
    Row(
        "GELU D5",
        "x/2 + even",
        1.06e-3,
        0.50e-3,
        # LS column: u P5(z) (degree 6 in u); ours: u^2 P5(z) (degree 7 in u), also 6
        # coefficients, whose real floor (0.18e-3) leaves room for the bf16 rounding.
        ls=_c("gelu", "u", 1, 5, True, 3.4, 3.43),
        best=_c("gelu", "u", 2, 5, True, 4.25, 3.75),
        best_grid=("3.8:4.6:0.05", "3.5:4.0:0.05"),
        floor_clamps=(3.2, 4.2),
        more_forms=(_c("gelu", "u", 1, 5, True, 3.5, 3.5), _c("gelu", "y", 0, 5, True, 3.5, 3.5)),
    ),
    Row(
        "sigmoid' D4",
        "even",
        4.46e-3,
        1.97e-3,
        ls=_c("sigmoid_grad", "u", 0, 4, True, 5.375, 5.40625),
        best=_c("sigmoid_grad", "u", 0, 4, True, 5.6, 5.6),
        best_grid=("5.1:5.7:0.05", "5.3:5.8:0.05"),
        floor_clamps=(4.8, 6.5),
        # The paper's 1.97e-3 is below the floor of every degree-4 form, and of degree 5 in
        # u^2; an even polynomial of degree 12 (degree 6 in u^2) reaches it.
        more_forms=(
            _c("sigmoid_grad", "y", 0, 4, True, 5.3, 5.3),
            _c("sigmoid_grad", "y", 0, 5, True, 5.9, 5.9),
            _c("sigmoid_grad", "y", 0, 6, True, 6.2, 6.2),
        ),
    ),
)


def get_row(name: str) -> Row:
    for row in ROWS:
        if row.name.lower() == name.lower():
            return row
    raise KeyError(f"no Table 2 row {name!r}; rows: {[r.name for r in ROWS]}")


# ---------------------------------------------------------------- floors


@dataclass(frozen=True)
class Floor:
    """The real-coefficient floor of a form over clamps in ``[lo, hi]``: ``lower`` <= floor
    <= ``upper`` (module docstring); ``clamp``: where ``upper`` was found."""

    lower: float
    upper: float
    clamp: float
    step: float


def floor(
    cfg: Config,
    clamps: tuple[float, float],
    step: float = 1 / 64,
    progress: Callable[[str], None] | None = None,
) -> Floor:
    """Bracket the smallest max error of ``cfg``'s form with float64 coefficients, over every
    clamp L_c in ``[clamps[0], clamps[1]]`` (fit interval = L_c: minimax on the window)."""
    lo, hi = float(clamps[0]), float(clamps[1])
    grid = np.arange(lo, hi + step / 2, step)
    tgt = PolySpec.template(cfg.target, cfg.degree, 1.0).tgt
    tails = np.array([tgt.tail_error(L) for L in grid])
    level = np.full(grid.size, np.nan)
    upper = np.full(grid.size, np.inf)
    for k, L in enumerate(grid):
        ps = cfg.at(L, fit_interval=L).fit("remez", "float64")
        # |E| <= minimax <= the window's max error; at convergence the two agree to rounding,
        # which may put |E| a few ulps above: clip it.
        level[k] = min(ps.meta["fit"]["levelled_error"], ps.meta["errors"]["window_error"])
        upper[k] = ps.meta["errors"]["max_abs_error"]
        if progress is not None:
            progress(f"{cfg.target} L_c {L:.4f}")
    # On [grid[k], grid[k+1]]: window >= level[k], tail >= tails[k+1]; below grid[0] and above
    # grid[-1] nothing is claimed (the scan's range must bracket the optimum: checked).
    lower = np.maximum(level[:-1], tails[1:])
    j = int(np.argmin(upper))
    # The optimum must be inside the range (a plateau that reaches an end is fine).
    if upper[1:-1].min() > upper[j] * (1 + 1e-9):
        raise ValueError(
            f"the best clamp {grid[j]:.4f} lies at the end of the scanned range {clamps}: widen it"
        )
    return Floor(float(lower.min()), float(upper[j]), float(grid[j]), step)


# ---------------------------------------------------------------- Sollya control


def sollya_control(cfg: Config, timeout: float = 120.0) -> dict:
    """fpminimax with bf16 coefficients for ``cfg``'s form in monomials of u (or u^2) on
    [0, L_c], measured by our error model at ``cfg``'s clamp. Raises RuntimeError if Sollya
    is absent or fails (``methods.sollya_fpminimax``)."""
    step = 1 if cfg.variable == "u" else 2
    degrees = [cfg.factor + step * k for k in range(cfg.degree + 1)]
    expr = SOLLYA_RESIDUALS[cfg.target]
    # With factor > 0 every monomial vanishes at 0 and Sollya's Remez fails there (not a Haar
    # system); the residual vanishes there too, so start the interval just right of 0.
    lo = 0.0 if cfg.factor == 0 else 2.0**-20
    res = methods.sollya_fpminimax(expr, degrees, "bfloat16", (lo, cfg.clamp), timeout=timeout)
    tpl = PolySpec.template(
        cfg.target,
        cfg.degree,
        cfg.clamp,
        variable=cfg.variable,
        factor=cfg.factor,
        shift=False,
        clamp=cfg.clamp,
        fmt="bfloat16",
    )
    ps = tpl.with_coefficients(res.coeffs, method="sollya-fpminimax")
    model = ErrorModel(ps)
    return {
        "max_abs_error": float(model(np.array(ps.coefficients))),
        "sollya_window_estimate": float(res.error),
        "clamp": cfg.clamp,
        "coefficients": [float(c) for c in ps.coefficients],
    }


# ---------------------------------------------------------------- the table


def _errors(ps: PolySpec) -> dict:
    e = ps.meta["errors"]
    return {k: float(e[k]) for k in ("max_abs_error", "window_error", "tail_error")} | {
        "op_count": int(e["op_count"])
    }


def evaluate_row(
    row: Row, *, floors: bool = True, sollya: bool = True, log: Callable[[str], None] | None = None
) -> dict:
    """Everything the table shows for one row (errors as fractions, not x1e-3)."""
    ls = row.ls.fit("endpoint-ls")
    best = row.best.fit("remez+search")
    out: dict = {
        "name": row.name,
        "paper_form": row.paper_form,
        "paper_ls": row.paper_ls,
        "paper_sollya": row.paper_sollya,
        "ls_form": row.ls.form(),
        "ls_config": asdict(row.ls),
        "ls": _errors(ls),
        "best_form": row.best.form(),
        "best_config": asdict(row.best),
        "best": _errors(best),
        "best_coefficients_hex": [float.hex(c) for c in best.coefficients],
    }
    if floors:
        out["floors"] = []
        for cfg in (row.best, *row.more_forms):
            fl = floor(cfg, _floor_range(row, cfg), progress=None)
            out["floors"].append({"form": cfg.form(), **asdict(fl)})
            if log:
                log(f"{row.name}: floor of {cfg.form()} in [{fl.lower:.4g}, {fl.upper:.4g}]")
    if sollya:
        try:
            out["sollya"] = sollya_control(row.best)
        except RuntimeError as exc:
            out["sollya"] = {"skipped": str(exc).splitlines()[0]}
    return out


def _floor_range(row: Row, cfg: Config) -> tuple[float, float]:
    if cfg == row.best:
        return row.floor_clamps
    return (cfg.clamp - 0.8, cfg.clamp + 0.8)


def evaluate(
    rows: Iterable[Row] = ROWS,
    *,
    floors: bool = True,
    sollya: bool = True,
    log: Callable[[str], None] | None = None,
) -> list[dict]:
    return [evaluate_row(r, floors=floors, sollya=sollya, log=log) for r in rows]


def _m(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v * 1e3:.3f}"


def render_markdown(results: Sequence[dict]) -> str:
    """The reproduced table beside the paper's (x1e-3), then the floors of every form."""
    lines = [
        "| row | paper LS / Sollya | LS form (L_i, L_c) | ours LS | vs paper | ours: remez+search, "
        "form (L_i, L_c) | ours | Sollya control (same form, our error) | floor of our form |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ls_c, b_c = r["ls_config"], r["best_config"]
        rel = r["ls"]["max_abs_error"] / r["paper_ls"] - 1
        sol = r.get("sollya", {})
        sol_txt = _m(sol.get("max_abs_error")) if "max_abs_error" in sol else "skipped"
        fl = r.get("floors", [{}])[0] if r.get("floors") else {}
        fl_txt = f"[{_m(fl['lower'])}, {_m(fl['upper'])}]" if fl else "-"
        lines.append(
            f"| {r['name']} | {_m(r['paper_ls'])} / {_m(r['paper_sollya'])} | "
            f"{r['ls_form']} ({ls_c['fit_interval']:g}, {ls_c['clamp']:g}) | "
            f"{_m(r['ls']['max_abs_error'])} | {rel:+.1%} | "
            f"{r['best_form']} ({b_c['fit_interval']:g}, {b_c['clamp']:g}) | "
            f"**{_m(r['best']['max_abs_error'])}** | {sol_txt} | {fl_txt} |"
        )
    more = [(r["name"], f) for r in results for f in r.get("floors", [])[1:]]
    if more:
        lines += ["", "| row | other form | real-coefficient floor (lower, upper) | at L_c |"]
        lines.append("|---|---|---|---|")
        for name, f in more:
            lines.append(
                f"| {name} | {f['form']} | [{_m(f['lower'])}, {_m(f['upper'])}] | "
                f"{f['clamp']:.4f} |"
            )
    return "\n".join(lines) + "\n"


__all__ = [
    "ROWS",
    "SOLLYA_RESIDUALS",
    "Config",
    "Floor",
    "Row",
    "evaluate",
    "evaluate_row",
    "floor",
    "get_row",
    "render_markdown",
    "sollya_control",
]
