"""Grid searches over (degree, fit interval L_i, clamp L_c), Pareto fronts of error against
operation count, and the paper's Figures 4 and 5 (GELU / GELU' error against x per degree).

``grid_search`` fits one PolySpec per (degree, L_i, L_c) allowed by a constraint
(``family_fit``: float64 fit on [0, L_i], coefficients rounded to the format, optional search)
and records the full program's real-arithmetic error (the polynomial up to L_c, its
extrapolation from L_i included, and the asymptote's tail beyond) and the operation count of
the Horner program with FMA. The float64 fit depends on (degree, L_i) only, so it is done once
for all clamps. ``pareto_front`` keeps the rows no other row beats in both operations and
error; ``best_per_degree`` the smallest error of each degree.

Everything is float64 numpy and deterministic; a row is plain JSON-able data, and
``spec_from_row`` rebuilds its PolySpec.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from . import family_fit, polyspec, report, targets
from .polyspec import PolySpec

Constraint = Callable[[float, float], bool]

AXES = {"ops": "op_count", "error": "max_abs_error"}
ROW_ERRORS = (
    "max_abs_error",
    "window_error",
    "window_argmax",
    "tail_error",
    "decided_by",
    "rounded_max_abs_error",
    "float64_fit_error",
    "float32_replay_max_abs_error",
    "target_replay_max_abs_error",
)


def default_constraint(L_i: float, L_c: float) -> bool:
    """The clamp at most one unit beyond the fit interval (extrapolating further is useless)."""
    return L_c <= L_i + 1.0 + 1e-12


def parse_values(text: str) -> list[float]:
    """'a:b:step' (a, a + step, ..., up to b inclusive, each rounded to 12 digits), or a
    comma-separated list of numbers (each part may itself be a range)."""
    out: list[float] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if ":" in part:
            pieces = part.split(":")
            if len(pieces) != 3:
                raise ValueError(f"range must be a:b:step, got {part!r}")
            a, b, step = (float(p) for p in pieces)
            if not step > 0 or b < a:
                raise ValueError(f"range needs step > 0 and b >= a, got {part!r}")
            n = int(math.floor((b - a) / step + 1e-9))
            out += [round(a + k * step, 12) for k in range(n + 1)]
        else:
            out.append(float(part))
    if not out:
        raise ValueError(f"no values in {text!r}")
    return out


def _row(ps: PolySpec) -> dict:
    e = ps.meta["errors"]
    row = {
        "target": ps.target,
        "variable": ps.variable,
        "factor": ps.factor,
        "shift": ps.shift,
        "fmt": ps.fmt,
        "method": ps.method,
        "degree": ps.degree,
        "L_i": ps.fit_interval,
        "L_c": ps.clamp,
        "op_count": e["op_count"],
    }
    row.update({k: e[k] for k in ROW_ERRORS if k in e})
    row["coefficients"] = list(ps.coefficients)
    if "search" in ps.meta:
        row["search_evaluations"] = ps.meta["search"]["evaluations"]
    return row


def spec_from_row(row: dict, **meta) -> PolySpec:
    """The PolySpec a ``grid_search`` row describes (its errors in ``meta``)."""
    return PolySpec(
        target=row["target"],
        variable=row["variable"],
        factor=row["factor"],
        shift=row["shift"],
        degree=row["degree"],
        fit_interval=row["L_i"],
        clamp=row["L_c"],
        fmt=row["fmt"],
        coefficients=tuple(row["coefficients"]),
        method=row["method"],
        meta={"errors": {k: row[k] for k in ROW_ERRORS if k in row}, **meta},
    )


def grid_search(
    target: str,
    degrees: Iterable[int],
    fit_intervals: Iterable[float],
    clamps: Iterable[float],
    fmt: str = "bfloat16",
    method: str = "endpoint-ls",
    variable: str | None = None,
    factor: int | None = None,
    constraint: Constraint = default_constraint,
    *,
    shift: bool = True,
    replay: bool = False,
    progress: Callable[[str], None] | None = None,
    **opts,
) -> list[dict]:
    """One row per (degree, L_i, L_c) with ``constraint(L_i, L_c)`` true.

    The form: ``variable`` / ``factor`` / ``shift`` as in ``family_fit.fit_polyspec`` (None:
    the target's natural form). Each row holds the form, ``degree``, ``L_i``, ``L_c``,
    ``max_abs_error`` (real arithmetic, fmt-rounded coefficients, the full program on the dense
    grid of [-X, X] including the tail), its parts ``window_error`` / ``tail_error``,
    ``rounded_max_abs_error`` (plain rounding) and ``float64_fit_error``, ``op_count`` (Horner
    with FMA, ``PolySpec.op_count``), the coefficients, and with ``replay`` the float32 replay's
    max error (``float32_replay_max_abs_error``; and the coefficient format's own,
    ``target_replay_max_abs_error``). ``opts``: the fit / search / grid settings of
    ``fit_polyspec``. A (degree, L_i) whose float64 fit fails is skipped with a warning.
    For a target without asymptote (exp2_frac) the clamp is inf: pass ``clamps=[math.inf]``.
    """
    base, _ = family_fit.split_method(method)
    fmt = family_fit.normalize_fmt(fmt)
    tgt = targets.get(target)
    unknown = set(opts) - (family_fit.OPTIONS - {"shift", "replay"})
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}")
    form = {"fmt": fmt, "shift": bool(shift)}
    if variable is not None:
        form["variable"] = variable
    if factor is not None:
        form["factor"] = int(factor)
    Lis = sorted({float(v) for v in fit_intervals})
    Lcs = sorted({float(v) for v in clamps})
    if tgt.asymptote_kind is None and Lcs != [math.inf]:
        raise ValueError(f"{target} has no asymptote: clamps must be [inf]")
    rows: list[dict] = []
    failed: list[str] = []
    for degree in sorted({int(d) for d in degrees}):
        for L_i in Lis:
            allowed = [L_c for L_c in Lcs if constraint(L_i, L_c)]
            if not allowed:
                continue
            tpl = PolySpec.template(target, degree, L_i, **form)
            try:
                c64, info = family_fit.fit_float64(tpl, base, **opts)
            except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
                failed.append(f"degree {degree} L_i {L_i:g}: {exc}")
                continue
            for L_c in allowed:
                tpl_c = tpl.with_coefficients(tpl.coefficients, clamp=L_c)
                try:
                    ps = family_fit.finish(tpl_c, c64, method, info, replay=replay, **opts)
                except ValueError as exc:
                    failed.append(f"degree {degree} L_i {L_i:g} L_c {L_c:g}: {exc}")
                    continue
                rows.append(_row(ps))
            if progress is not None:
                progress(f"degree {degree} L_i {L_i:g}: {len(rows)} rows")
    if failed:
        warnings.warn(
            f"{target} {method}: {len(failed)} fit(s) failed and were skipped, e.g. {failed[0]}",
            stacklevel=2,
        )
    return rows


def _key(name: str) -> str:
    return AXES.get(name, name)


def pareto_front(rows: Sequence[dict], x: str = "ops", y: str = "max_abs_error") -> list[dict]:
    """The rows no other row beats in both ``x`` and ``y`` (both minimized; "ops" is
    ``op_count``, "error" ``max_abs_error``), by increasing x (so decreasing y). Of rows with
    equal x only the smallest y can be on the front; exact duplicates keep the first. Rows
    whose x or y is not a finite number are left out."""
    kx, ky = _key(x), _key(y)
    ok = [
        (float(r[kx]), float(r[ky]), i, r)
        for i, r in enumerate(rows)
        if r.get(kx) is not None
        and r.get(ky) is not None
        and math.isfinite(float(r[kx]))
        and math.isfinite(float(r[ky]))
    ]
    ok.sort(key=lambda t: (t[0], t[1], t[2]))
    front, best = [], math.inf
    for _, yv, _, r in ok:
        if yv < best:
            front.append(r)
            best = yv
    return front


def best_per_degree(rows: Sequence[dict], y: str = "max_abs_error") -> list[dict]:
    """For each degree (increasing) the row with the smallest ``y`` (the first of equals)."""
    ky = _key(y)
    best: dict[int, dict] = {}
    for r in rows:
        d = r["degree"]
        if d not in best or r[ky] < best[d][ky]:
            best[d] = r
    return [best[d] for d in sorted(best)]


def _fmt_e(v) -> str:
    return "" if v is None else f"{float(v):.4e}"


def render_markdown(rows: Sequence[dict], title: str = "") -> str:
    """Markdown: the best (L_i, L_c) of each degree, then the Pareto front (ops vs error)."""
    has_replay = any("float32_replay_max_abs_error" in r for r in rows)

    def table(sel: Sequence[dict]) -> list[str]:
        head = ["degree", "ops", "L_i", "L_c", "max abs error", "x1e-3", "window", "tail"]
        head += ["plain rounding", "float64 fit"] + (["float32 replay"] if has_replay else [])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in sel:
            cells = [
                str(r["degree"]),
                str(r["op_count"]),
                f"{r['L_i']:g}",
                f"{r['L_c']:g}",
                _fmt_e(r["max_abs_error"]),
                f"{1e3 * r['max_abs_error']:.3f}",
                _fmt_e(r.get("window_error")),
                _fmt_e(r.get("tail_error")),
                _fmt_e(r.get("rounded_max_abs_error")),
                _fmt_e(r.get("float64_fit_error")),
            ]
            if has_replay:
                cells.append(_fmt_e(r.get("float32_replay_max_abs_error")))
            lines.append("| " + " | ".join(cells) + " |")
        return lines

    out = []
    if title:
        out += [f"# {title}", ""]
    if not rows:
        return "\n".join(out + ["(no rows)"]) + "\n"
    r0 = rows[0]
    out += [
        f"{r0['target']}: variable {r0['variable']}, factor {r0['factor']}, shift {r0['shift']}, "
        f"{r0['fmt']} coefficients, {r0['method']}; {len(rows)} (degree, L_i, L_c) fitted; "
        "errors in real arithmetic over the dense grid of [-X, X], clamp tail included",
        "",
        "## Best (L_i, L_c) per degree",
        "",
        *table(best_per_degree(rows)),
        "",
        "## Pareto front (operations vs max abs error)",
        "",
        *table(pareto_front(rows)),
    ]
    return "\n".join(out) + "\n"


def plot_search(rows: Sequence[dict], path: str | Path | None = None, *, title: str | None = None):
    """Max abs error (log) against op count: every row (by degree) and the Pareto front.
    Returns the matplotlib Figure; with ``path`` also writes it as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(6.4, 4.2), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for d in sorted({r["degree"] for r in rows}):
        sel = [r for r in rows if r["degree"] == d and math.isfinite(r["max_abs_error"])]
        ax.scatter(
            [r["op_count"] for r in sel],
            [r["max_abs_error"] for r in sel],
            s=8,
            alpha=0.35,
            label=f"degree {d} ({len(sel)} fits)",
        )
    front = pareto_front(rows)
    if front:
        ax.step(
            [r["op_count"] for r in front],
            [r["max_abs_error"] for r in front],
            where="post",
            color="k",
            lw=1.2,
            marker="o",
            ms=4,
            label="Pareto front",
        )
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("operations (Horner, FMA)")
    ax.set_ylabel("max |error| (real arithmetic)")
    if rows:
        r0 = rows[0]
        default = f"{r0['target']} {r0['fmt']} {r0['method']}: error vs operations"
        ax.set_title(title if title is not None else default)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return report.save_png(fig, path)


# ---------------------------------------------------------------- Figures 4 and 5

FIGURE_PARTS = (("forward", "gelu"), ("backward", "gelu_grad"))
FIGURE_FIT_INTERVALS = tuple(parse_values("2:6:0.1"))
FIGURE_CLAMPS = tuple(parse_values("2:6.5:0.1"))


def degree_figures(
    fmt: str = "bfloat16",
    degrees: Sequence[int] = (3, 4, 5, 6),
    out_dir: str | Path = "results/figures",
    *,
    method: str = "endpoint-ls",
    variable: str | None = "u",
    factor: int | None = 1,
    shift: bool = True,
    fit_intervals: Sequence[float] = FIGURE_FIT_INTERVALS,
    clamps: Sequence[float] = FIGURE_CLAMPS,
    precision: str = "target",
    progress: Callable[[str], None] | None = None,
) -> dict:
    """The paper's Figures 4 (GELU) and 5 (GELU'): at each degree, the spec of smallest
    real-arithmetic error over a small (L_i, L_c) grid search (``grid_search``, ``fmt``
    coefficients), then its absolute error at every ``fmt`` input in [-6, 6] evaluated as
    ``polyspec.replay(ps, x, precision=precision)`` ("target": every operation in ``fmt``, a
    native bf16 program; "float32": float32 arithmetic), one line per degree
    (``report.plot_abs_error``). Default form: x/2 + |x| P(|x|) and 1/2 + x P(|x|) (variable
    "u", factor 1, shift z = 2|x|/L_i - 1).

    Writes ``gelu_forward_<fmt>.png``, ``gelu_backward_<fmt>.png`` and ``figures_<fmt>.json``
    (the chosen specs) under ``out_dir``; returns ``{"forward": png, "backward": png,
    "json": path, "specs": {part: [PolySpec, ...]}}``.
    """
    fmt = family_fit.normalize_fmt(fmt)
    if fmt not in report.FORMATS:
        raise ValueError(f"figures need a 16-bit input format {report.FORMATS}, got {fmt!r}")
    if precision not in ("target", "float32"):
        raise ValueError(f"precision must be 'target' or 'float32', got {precision!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {"specs": {}}
    summary: dict = {"fmt": fmt, "method": method, "precision": precision, "parts": {}}
    for part, target in FIGURE_PARTS:
        rows = grid_search(
            target,
            degrees,
            fit_intervals,
            clamps,
            fmt,
            method,
            variable,
            factor,
            shift=shift,
            progress=progress,
        )
        specs = [spec_from_row(r) for r in best_per_degree(rows)]
        curves = []
        for ps in specs:
            label = (
                f"degree {ps.degree}, L_i {ps.fit_interval:g}, L_c {ps.clamp:g} "
                f"(real max {ps.meta['errors']['max_abs_error']:.2e})"
            )
            curves.append((label, lambda x, ps=ps: polyspec.replay(ps, x, precision=precision)))
        png = out / f"gelu_{part}_{fmt}.png"
        prog = f"{fmt} arithmetic" if precision == "target" else "float32 arithmetic"
        report.plot_abs_error(
            curves,
            fmt,
            png,
            fn=target,
            title=f"{target}: {fmt} coefficients, {method}, {prog}",
        )
        result[part] = png
        result["specs"][part] = specs
        summary["parts"][part] = {"target": target, "specs": [ps.to_dict() for ps in specs]}
    path = out / f"figures_{fmt}.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    result["json"] = path
    return result
