"""The paper's Table 2 (five activation approximations, bfloat16 coefficients): first at the
paper's own forms, then with the larger or different programs that do better, labelled as such.

The paper gives, per row, a function, a "degree" (D3/D4/D5) and a reduction, and the max abs
error (x1e-3) of two fits with bfloat16 coefficients in real arithmetic: endpoint-constrained
least squares ("LS") and Sollya's fpminimax ("Sollya", a "same-form" control). It does not give
the fit interval L_i, the clamp L_c, the evaluation variable or how the coefficients were
rounded.

**The paper's form** (``Row.paper_powers``: the powers of |x| in the residual polynomial, our
reading; ``Row.reading`` says why). The paper fits the positive half u = |x| and recovers the
other half by symmetry; its endpoint-constrained basis fixes the polynomial's value at u = 0 to
the residual's, r(0) = 0. So:

* sigmoid "D3, 1/2 + odd": 1/2 + sign(x)(c1 u + c2 u^2 + c3 u^3), 3 coefficients, no constant
  term: an odd residual with a constant term would jump by 2|P(0)| at x = 0 ("D4, odd" for tanh
  rules out reading "odd" as odd powers only: an odd polynomial has odd degree);
* tanh "D4, odd": sign(x)(c1 u + ... + c4 u^4), 4 coefficients, no jump;
* SiLU "D3, x/2 + even": x/2 + P3(x^2), degree 6 in x, 4 coefficients (D as the degree in
  x^2, as for GELU; degree 3 in |x| has a floor above both paper figures too,
  ``Row.more_forms``);
* GELU "D5, x/2 + even": x/2 + P5(x^2), degree 10, 6 coefficients, no odd power of |x|;
* sigmoid' "D4, even": P4(|x|), 5 coefficients (P4(x^2)'s floor is above the paper's own LS
  figure, which P4(|x|) reproduces: so "D4" here is degree 4 in |x|).

Continuity: even residuals are continuous at 0 whatever their constant term; the odd forms above
have none (``x Q(|x|)``: exactly 0 at x = 0 with any coefficients).

* ``Row.same``: our fit **at the paper's form**: ``remez+search`` (minimax, coefficients
  rounded to bf16, then the neighbour search of ``methods.search_rounded``) at the (L_i, L_c)
  that ``search.grid_search`` found on ``Row.same_grid``; in the normalized variable z = 2v/V - 1
  (one FMA, as the paper's normalized coordinates cost one multiply). ``Row.same_ls``: the
  paper's own method, ``endpoint-ls``, at the same form: the (L_i, L_c) of ``Row.same_ls_grid``
  whose error is closest to the paper's LS figure (for SiLU and GELU: the smallest, every one
  being far above it).
* ``floor(config)``: the smallest max error any real-coefficient polynomial of the form can
  reach, over every clamp: bracketed between a lower bound (Remez' levelled error, a lower
  bound of the minimax error on [0, a] by de la Vallee Poussin, combined over each clamp cell
  [a, b] with the tail error at b: the window error only grows with L_c and the tail error
  only shrinks) and the best value found on the clamp grid. A paper figure below the lower
  bound is out of reach of every program of that form under this error measure.
* ``Row.ls``: the form and (L_i, L_c) at which ``endpoint-ls`` gives the paper's LS number
  within 5 % (L_i on a 1/16 grid, L_c on 1/32; ``experiments/archive/table2_research/`` has
  the wider search over readings of "Dk"): ``Row.same_ls`` where that reproduces it, a larger
  form for SiLU and GELU, where no LS fit of the paper's form comes near the paper's number.
* ``Row.best``: **a different program** where one does better: a constant term for the odd
  residuals (a jump at 0), a higher degree for SiLU, odd powers of |x| for GELU (found by the
  grid of ``Row.best_grid``).
* ``sollya_control(config)``: fpminimax (bf16 coefficients, monomials in u or u^2) on
  [0, L_c] for the same form, its error then measured by our own error model (the tail
  included). A control only: Sollya's figures never enter a reference comparison.

``claims(results)`` states the headline from the same-form entries only; ``structure(ps)``
gives each program's powers of |x|, coefficient count, degree in x, jump at 0 and operations.
**Operations** are counted once, as ``PolySpec.op_count`` does: the FMAs, multiplies and adds
of the program inside the clamp (Horner with FMA), plus ``sign_transfer`` (one copysign where
an odd residual is not multiplied by x itself). Every program here also takes |x| and does one
compare with the clamp and one select: not counted, being the same for all.

Errors are those of ``family_fit.ErrorModel``: the whole program (polynomial inside the
clamp, asymptote beyond) in real arithmetic on a dense grid (step 2^-10) of [0, max(8,
1.5 L_c)], standing for [-X, X]. The paper does not say what its program returns beyond the
clamp nor over which interval its errors are measured: the floors hold for this program and
this measure (the maximum over all real x; the floor's lower bound is a bound on that). A
maximum taken only at bfloat16 inputs, as the paper's appendix measures, can come out lower:
near the clamp of tanh (L_c ~ 2.81) bfloat16 inputs are 2^-6 apart, enough to close tanh's
0.5 % margin below its floor, but not the margins of 20 % and more of the other rows.
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
    paper_powers: tuple[int, ...]  # powers of |x| in the paper's residual polynomial (reading)
    reading: str  # why that reading
    same: Config  # remez+search at the paper's form
    same_grid: tuple[str, str]  # search.parse_values texts of L_i and L_c
    same_ls: Config  # endpoint-ls at the paper's form
    same_ls_grid: tuple[str, str]
    same_floor: tuple[float, float, float]  # clamp range and step of the same form's floor
    ls: Config
    best: Config
    best_grid: tuple[str, str]
    floor_clamps: tuple[float, float]  # the clamp range scanned for the best form's floor
    more_forms: tuple[tuple[Config, str], ...] = ()  # other forms whose floors are recorded


def _c(target, variable, factor, degree, shift, li, lc) -> Config:
    return Config(target, variable, factor, degree, shift, li, lc)


ROWS: tuple[Row, ...] = (
    Row(
        "sigmoid D3",
        "1/2 + odd",
        5.44e-3,
        5.47e-3,
        paper_powers=(1, 2, 3),
        reading="odd residual sign(x) P3(|x|), P(0) = r(0) = 0 (the endpoint basis): no jump",
        same=_c("sigmoid", "u", 1, 2, True, 5.32, 5.26),
        same_grid=("4.6:5.6:0.04", "5.0:5.6:0.02"),
        same_ls=_c("sigmoid", "u", 1, 2, True, 6.5, 5.20625),
        same_ls_grid=("4.5:7.5:0.125", "4.8:5.8:0.03125"),
        same_floor=(4.8, 5.8, 1 / 64),
        ls=_c("sigmoid", "u", 1, 2, True, 6.5, 5.20625),
        # A constant term: 4 coefficients and a jump of 2|P(0)| at x = 0.
        best=_c("sigmoid", "u", 0, 3, False, 5.06, 5.44),
        best_grid=("4.9:5.2:0.02", "5.3:5.6:0.02"),
        floor_clamps=(4.5, 6.5),
    ),
    Row(
        "tanh D4",
        "odd",
        9.61e-3,
        7.22e-3,
        paper_powers=(1, 2, 3, 4),
        reading="odd residual sign(x) P4(|x|), P(0) = r(0) = 0: no jump",
        same=_c("tanh", "u", 1, 3, True, 2.84, 2.78),
        same_grid=("2.5:3.1:0.02", "2.7:2.95:0.01"),
        same_ls=_c("tanh", "u", 1, 3, True, 2.7625, 2.68125),
        same_ls_grid=("2.2:3.4:0.0625", "2.4:3.2:0.03125"),
        # The floor's optimum is near L_c 2.807 and the paper's 7.22 within 1 % of it: a fine
        # clamp grid (a narrow range is enough, floor() bounds every clamp outside it).
        same_floor=(2.79, 2.83, 1 / 1024),
        ls=_c("tanh", "u", 1, 3, True, 2.7625, 2.68125),
        best=_c("tanh", "u", 0, 4, False, 2.86, 2.85),
        best_grid=("2.7:3.0:0.02", "2.75:2.95:0.02"),
        floor_clamps=(2.3, 3.4),
    ),
    Row(
        "SiLU D3",
        "x/2 + even",
        21.74e-3,
        19.95e-3,
        paper_powers=(0, 2, 4, 6),
        reading="even residual P3(x^2): degree 6, 4 coefficients",
        same=_c("silu", "y", 0, 3, True, 5.35, 5.3),
        same_grid=("4.6:5.8:0.05", "5.0:5.7:0.025"),
        same_ls=_c("silu", "y", 0, 3, True, 5.0, 5.1125),
        same_ls_grid=("4.5:6.5:0.0625", "4.8:6.0:0.03125"),
        same_floor=(4.8, 5.8, 1 / 64),
        # No fit of the paper's form comes near the paper's LS number (its floor is above it):
        # an even polynomial of degree 8 (degree 4 in u^2) fits the LS column, whose value is
        # the clamp's tail error at L_c.
        ls=_c("silu", "y", 0, 4, True, 5.4375, 5.53125),
        best=_c("silu", "y", 0, 4, True, 5.9, 5.9),
        best_grid=("5.4:6.4:0.1", "5.5:6.5:0.1"),
        floor_clamps=(5.0, 6.8),
        more_forms=((_c("silu", "u", 0, 3, False, 5.0, 5.0), "other reading: degree 3 in u"),),
    ),
    Row(
        "GELU D5",
        "x/2 + even",
        1.06e-3,
        0.50e-3,
        paper_powers=(0, 2, 4, 6, 8, 10),
        reading="even residual P5(x^2): degree 10, 6 coefficients, no odd power of |x|",
        same=_c("gelu", "y", 0, 5, True, 3.6, 3.34),
        same_grid=("3.0:4.0:0.04", "3.2:3.7:0.02"),
        same_ls=_c("gelu", "y", 0, 5, True, 3.175, 3.25),
        same_ls_grid=("2.8:4.2:0.0625", "3.0:3.8:0.03125"),
        same_floor=(3.1, 3.8, 1 / 64),
        # LS column: u P5(z) (degree 6 in u, odd powers of |x|); ours: u^2 P5(z) (degree 7 in
        # u), also 6 coefficients, whose real floor (0.18e-3) leaves room for the bf16 rounding.
        ls=_c("gelu", "u", 1, 5, True, 3.4, 3.43),
        best=_c("gelu", "u", 2, 5, True, 4.25, 3.75),
        best_grid=("3.8:4.6:0.05", "3.5:4.0:0.05"),
        floor_clamps=(3.2, 4.2),
        more_forms=(
            (_c("gelu", "u", 1, 5, True, 3.5, 3.5), "the LS column's form"),
            (_c("gelu", "u", 0, 5, True, 3.3, 3.3), "other reading: degree 5 in u"),
        ),
    ),
    Row(
        "sigmoid' D4",
        "even",
        4.46e-3,
        1.97e-3,
        paper_powers=(0, 1, 2, 3, 4),
        reading="even residual P4(|x|): P4(x^2)'s floor is above the paper's own LS figure",
        same=_c("sigmoid_grad", "u", 0, 4, True, 5.6, 5.6),
        same_grid=("5.0:6.2:0.05", "5.3:5.9:0.025"),
        same_ls=_c("sigmoid_grad", "u", 0, 4, True, 5.2375, 5.40625),
        same_ls_grid=("4.8:6.4:0.0625", "5.0:6.0:0.03125"),
        same_floor=(4.8, 6.5, 1 / 64),
        ls=_c("sigmoid_grad", "u", 0, 4, True, 5.2375, 5.40625),
        best=_c("sigmoid_grad", "u", 0, 4, True, 5.6, 5.6),
        best_grid=("5.1:5.7:0.05", "5.3:5.8:0.05"),
        floor_clamps=(4.8, 6.5),
        # The paper's 1.97e-3 is below the floor of every degree-4 form, and of degree 5 in
        # u^2; an even polynomial of degree 12 (degree 6 in u^2) reaches it.
        more_forms=(
            (_c("sigmoid_grad", "y", 0, 4, True, 5.3, 5.3), "other reading: degree 4 in u^2"),
            (_c("sigmoid_grad", "y", 0, 5, True, 5.9, 5.9), "larger: degree 10"),
            (_c("sigmoid_grad", "y", 0, 6, True, 6.2, 6.2), "larger: degree 12"),
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
    """Bracket the smallest max error of ``cfg``'s form with real coefficients, over every
    clamp L_c > 0: the upper end is the best found on the grid of ``clamps`` (fit interval =
    L_c: minimax on the window), the lower end a bound for every clamp (module docstring)."""
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
    # Clamps outside the range: below lo the tail alone is at least tails[0]; above hi the
    # window is at least level[-1] (minimax on [0, L] only grows with L). With these two the
    # lower bound holds for every clamp L_c > 0, not only those scanned.
    lower_all = min(float(lower.min()), float(tails[0]), float(level[-1]))
    j = int(np.argmin(upper))
    # The optimum must be inside the range (a plateau that reaches an end is fine).
    if upper[1:-1].min() > upper[j] * (1 + 1e-9):
        raise ValueError(
            f"the best clamp {grid[j]:.4f} lies at the end of the scanned range {clamps}: widen it"
        )
    return Floor(lower_all, float(upper[j]), float(grid[j]), step)


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
        "sollya_version": methods.sollya_version(),
        "clamp": cfg.clamp,
        "coefficients": [float(c) for c in ps.coefficients],
    }


# ---------------------------------------------------------------- programs and their shape


def structure(ps: PolySpec) -> dict:
    """What program ``ps`` is, beyond its error: the powers of |x| its residual polynomial
    spans, the number of coefficients, the degree in x, whether the function inside the clamp
    is a polynomial in x (even powers for an even residual, odd ones for an odd residual), the
    jump at x = 0 (2 |P(0)| for an odd residual, 0 for an even one) and the operations
    (module docstring: ``PolySpec.op_count`` plus a sign transfer where one is needed)."""
    step = 1 if ps.variable == "u" else 2
    powers = [ps.factor + step * k for k in range(ps.degree + 1)]
    parity = ps.tgt.residual_parity
    want = 0 if parity == "even" else 1
    r0 = float(ps.residual_approx(np.zeros(1))[0])
    # replay.program multiplies by x itself (no copysign) when the last factor is u.
    through_x = ps.factor >= 1 and (ps.variable == "u" or ps.factor % 2 == 1)
    ops = ps.op_count("horner", fma=True)
    return {
        "powers_of_abs_x": powers,
        "coefficients": ps.degree + 1,
        "degree_in_x": max(powers),
        "polynomial_in_x": all(p % 2 == want for p in powers),
        "jump_at_0": 2.0 * abs(r0) if parity == "odd" else 0.0,
        "ops": {**ops, "sign_transfer": int(parity == "odd" and not through_x)},
    }


def same_program(row: Row, ps: PolySpec) -> bool:
    """Whether ``ps`` is a program of the paper's form for ``row``: the same target, the same
    powers of |x| (so the same coefficient count and degree) and no jump at 0."""
    st = structure(ps)
    return (
        ps.target == row.same.target
        and tuple(st["powers_of_abs_x"]) == row.paper_powers
        and st["jump_at_0"] == 0.0
    )


def _ops_text(ops: dict) -> str:
    parts = [f"{ops[k]} {name}" for k, name in (("fma", "FMA"), ("mul", "mul"), ("add", "add"))]
    text = " + ".join(p for p in parts if not p.startswith("0 "))
    return text + (" + sign" if ops.get("sign_transfer") else "")


# ---------------------------------------------------------------- the table


def _errors(ps: PolySpec) -> dict:
    e = ps.meta["errors"]
    return {k: float(e[k]) for k in ("max_abs_error", "window_error", "tail_error")} | {
        "op_count": int(e["op_count"]),
        "structure": structure(ps),
    }


def verdict(value: float, fl: dict) -> str:
    """Where a paper figure lies against a floor bracket [lower, upper] of a form."""
    if value < fl["lower"]:
        return "below the floor"  # no coefficients of the form reach it
    if value >= fl["upper"]:
        return "above the floor"  # real coefficients of the form reach it
    return "inside the bracket"


def evaluate_row(
    row: Row, *, floors: bool = True, sollya: bool = True, log: Callable[[str], None] | None = None
) -> dict:
    """Everything the table shows for one row (errors as fractions, not x1e-3)."""
    same = row.same.fit("remez+search")
    same_ls = row.same_ls.fit("endpoint-ls")
    ls = row.ls.fit("endpoint-ls")
    best = row.best.fit("remez+search")
    out: dict = {
        "name": row.name,
        "paper_form": row.paper_form,
        "paper_ls": row.paper_ls,
        "paper_sollya": row.paper_sollya,
        "paper_powers": list(row.paper_powers),
        "reading": row.reading,
        # first: the paper's own form
        "same_form": row.same.form(),
        "same_config": asdict(row.same),
        "same": _errors(same),
        "same_coefficients_hex": [float.hex(c) for c in same.coefficients],
        "same_ls_config": asdict(row.same_ls),
        "same_ls": _errors(same_ls),
        # then: the LS column's reproduction and the better form, each marked with whether it
        # is a program of the paper's form
        "ls_form": row.ls.form(),
        "ls_config": asdict(row.ls),
        "ls": _errors(ls),
        "ls_same_program": same_program(row, ls),
        "best_form": row.best.form(),
        "best_config": asdict(row.best),
        "best": _errors(best),
        "best_same_program": same_program(row, best),
        "best_coefficients_hex": [float.hex(c) for c in best.coefficients],
    }
    if floors:
        lo, hi, step = row.same_floor
        fl = floor(row.same, (lo, hi), step=step)
        out["same_floor"] = {"form": row.same.form(), **asdict(fl)}
        out["same_verdicts"] = {
            "paper_ls": verdict(row.paper_ls, out["same_floor"]),
            "paper_sollya": verdict(row.paper_sollya, out["same_floor"]),
        }
        if log:
            log(f"{row.name}: floor of {row.same.form()} in [{fl.lower:.4g}, {fl.upper:.4g}]")
        out["floors"] = []
        for cfg, note in ((row.best, "better form"), *row.more_forms):
            if cfg == row.same:  # sigmoid': the best form is the paper's form
                fl = Floor(**{k: out["same_floor"][k] for k in ("lower", "upper", "clamp", "step")})
            else:
                fl = floor(cfg, _floor_range(row, cfg), progress=None)
            out["floors"].append({"form": cfg.form(), "note": note, **_shape(cfg), **asdict(fl)})
            if log:
                log(f"{row.name}: floor of {cfg.form()} in [{fl.lower:.4g}, {fl.upper:.4g}]")
    if sollya:
        for key, cfg in (("same_sollya", row.same), ("sollya", row.best)):
            try:
                out[key] = sollya_control(cfg)
            except RuntimeError as exc:
                out[key] = {"skipped": str(exc).splitlines()[0]}
    return out


def _shape(cfg: Config) -> dict:
    """The powers of |x|, coefficient count and degree of a form (no coefficients needed)."""
    st = structure(PolySpec.template(cfg.target, cfg.degree, 1.0, **_form_kw(cfg)))
    return {k: st[k] for k in ("powers_of_abs_x", "coefficients", "degree_in_x")}


def _form_kw(cfg: Config) -> dict:
    return {"variable": cfg.variable, "factor": cfg.factor, "shift": cfg.shift}


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


# ---------------------------------------------------------------- the headline

LS_TOLERANCE = 0.05  # "reproduced": within 5 % of the paper's LS figure


def claims(results: Sequence[dict]) -> dict:
    """The comparison with the paper, from the same-form entries only (``same``, ``same_ls``,
    ``same_floor``): the larger or different programs (``ls`` where it is not of the paper's
    form, ``best``) never enter it. Row names per claim; floors only where computed."""
    out: dict = {
        "rows": len(results),
        "same_at_or_below_paper_sollya": [
            r["name"] for r in results if r["same"]["max_abs_error"] <= r["paper_sollya"]
        ],
        "same_ls_within_5_percent": [
            r["name"]
            for r in results
            if abs(r["same_ls"]["max_abs_error"] / r["paper_ls"] - 1) <= LS_TOLERANCE
        ],
        "floors": all("same_floor" in r for r in results) and bool(results),
    }
    if out["floors"]:
        for key in ("paper_sollya", "paper_ls"):
            out[f"{key}_below_floor"] = [
                r["name"] for r in results if r[key] < r["same_floor"]["lower"]
            ]
    return out


def _names(names: Sequence[str]) -> str:
    return f" ({', '.join(names)})" if names else ""


def headline(results: Sequence[dict]) -> str:
    """The comparison in words, built from ``claims`` (same-form rows only)."""
    c = claims(results)
    n = c["rows"]
    sol, ls = c["same_at_or_below_paper_sollya"], c["same_ls_within_5_percent"]
    text = (
        f"At the paper's own forms (the same powers of |x|, coefficient count and continuity at "
        f"0), our minimax fit with bfloat16 coefficients is at or below the paper's Sollya "
        f"figure in {len(sol)} of {n} rows{_names(sol)}, and our endpoint-constrained LS is "
        f"within 5 % of the paper's LS figure in {len(ls)} of {n}{_names(ls)}."
    )
    if c["floors"]:
        below, ls_below = c["paper_sollya_below_floor"], c["paper_ls_below_floor"]
        text += (
            f" The paper's Sollya figure is below the proven floor of its form (no real "
            f"coefficients reach it, under this error measure: the whole line, the asymptote "
            f"beyond the clamp) in {len(below)} of {n} rows{_names(below)}"
        )
        text += (
            f"; its LS figure in {len(ls_below)}{_names(ls_below)}."
            if ls_below
            else "; its LS figure in none."
        )
    else:
        text += " (Floors not computed in this run.)"
    return text


# ---------------------------------------------------------------- markdown


def _m(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v * 1e3:.3f}"


def _shape_text(st: dict) -> str:
    return f"{st['coefficients']} / {st['degree_in_x']}"


def _jump_text(st: dict) -> str:
    j = st["jump_at_0"]
    return "0" if j == 0 else f"{j:.2g}"


LEGEND = (
    "Errors x1e-3. u = |x|, z: u or u^2 normalized to [-1, 1] (one FMA). coef. / deg.: the "
    "number of coefficients and the degree in x. jump at 0: f(0+) - f(0-) of the program. ops: "
    "per element inside the clamp, Horner with FMA (+ sign: a copysign); every program also "
    "takes |x| and does one compare and one select, not counted. Sollya fpminimax: the same "
    "form in monomials (no z), at our clamp, measured by our error model."
)


def sollya_note(results: Sequence[dict]) -> str:
    """Which Sollya made the control column, or why it is empty (not installed, failed, or
    not asked for)."""
    runs = [r[k] for r in results for k in ("same_sollya", "sollya") if k in r]
    versions = sorted({str(v.get("sollya_version")) for v in runs if "max_abs_error" in v})
    skipped = sorted({v["skipped"] for v in runs if "skipped" in v})
    if versions:
        note = f"Sollya column: Sollya {', '.join(versions)}."
        return note + (f" Some rows failed: {'; '.join(skipped)}." if skipped else "")
    if skipped:
        return f"Sollya column not run: {'; '.join(skipped)}."
    return "Sollya column not run (not asked for: --no-sollya)."


def render_markdown(results: Sequence[dict]) -> str:
    """The headline, then the paper's forms (same programs), then the different programs
    (the LS column at a larger form, the better forms), then the floors of other forms.
    Errors x1e-3; "coef. / deg.": coefficients and degree in x; ops: module docstring."""
    legend = f"{LEGEND} {sollya_note(results)}"
    lines = [headline(results), "", legend, "", "**Same program as the paper's row**:", ""]
    lines += [
        "| row | paper's form (our reading) | coef. / deg. | jump at 0 | ops | paper LS | "
        "ours, endpoint LS | paper Sollya | ours, remez+search (L_i, L_c) | Sollya fpminimax "
        "(our error) | floor of the form | paper Sollya vs floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        st = r["same"]["structure"]
        cfg = r["same_config"]
        sol = r.get("same_sollya", {})
        sol_txt = _m(sol["max_abs_error"]) if "max_abs_error" in sol else "-"
        fl = r.get("same_floor")
        fl_txt = f"[{_m(fl['lower'])}, {_m(fl['upper'])}]" if fl else "-"
        ver = r["same_verdicts"]["paper_sollya"] if fl else "-"
        lines.append(
            f"| {r['name']} | {r['same_form']} | {_shape_text(st)} | {_jump_text(st)} | "
            f"{_ops_text(st['ops'])} | {_m(r['paper_ls'])} | {_m(r['same_ls']['max_abs_error'])}"
            f" | {_m(r['paper_sollya'])} | **{_m(r['same']['max_abs_error'])}** "
            f"({cfg['fit_interval']:g}, {cfg['clamp']:g}) | {sol_txt} | {fl_txt} | {ver} |"
        )
    lines += [
        "",
        "**Different programs** (not the paper's form; the paper's figure is beside them, not "
        "compared):",
        "",
        "| row | role | program | coef. / deg. | jump at 0 | ops | (L_i, L_c) | max error | "
        "paper's figure beside it | floor of the form |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        parts = []
        if not r["ls_same_program"]:
            parts.append(("LS column reproduced", "ls", r["paper_ls"], None))
        if not r["best_same_program"]:
            fl = r.get("floors", [None])[0] if r.get("floors") else None
            parts.append(("better form", "best", r["paper_sollya"], fl))
        for role, key, paper, fl in parts:
            st, cfg = r[key]["structure"], r[f"{key}_config"]
            fl_txt = f"[{_m(fl['lower'])}, {_m(fl['upper'])}]" if fl else "-"
            lines.append(
                f"| {r['name']} | {role} | {r[f'{key}_form']} | {_shape_text(st)} | "
                f"{_jump_text(st)} | {_ops_text(st['ops'])} | ({cfg['fit_interval']:g}, "
                f"{cfg['clamp']:g}) | {_m(r[key]['max_abs_error'])} | {_m(paper)} | {fl_txt} |"
            )
    more = [(r["name"], f) for r in results for f in r.get("floors", [])[1:]]
    if more:
        lines += ["", "**Floors of other forms**:", ""]
        lines += ["| row | other form | coef. / deg. | real-coefficient floor | at L_c |"]
        lines.append("|---|---|---|---|---|")
        for name, f in more:
            lines.append(
                f"| {name} | {f['form']} ({f['note']}) | {f['coefficients']} / "
                f"{f['degree_in_x']} | [{_m(f['lower'])}, {_m(f['upper'])}] | {f['clamp']:.4f} |"
            )
    return "\n".join(lines) + "\n"


__all__ = [
    "LS_TOLERANCE",
    "ROWS",
    "SOLLYA_RESIDUALS",
    "Config",
    "Floor",
    "Row",
    "evaluate",
    "evaluate_row",
    "floor",
    "claims",
    "get_row",
    "headline",
    "render_markdown",
    "same_program",
    "sollya_control",
    "sollya_note",
    "structure",
    "verdict",
]
