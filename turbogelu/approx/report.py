"""Error reports for any float32 approximation of an exact function (numpy, no torch).

An approximation is a float32 evaluator ``approx(x: float32 array) -> float32 array``, e.g.
``lambda x: replay.forward32(x, part)`` for a fitted spec; the exact function is a name of
``rounding.FUNCTIONS`` ('gelu', 'gelu_tanh', 'gelu_grad', 'silu', 'tanh', ...; a GELU mode
'none' / 'tanh' names GELU only where no function has that name, so 'tanh' is tanh itself).

* :func:`exhaustive`: every finite bfloat16 / float16 input, the float32 result rounded to the
  format (nearest even), against the *correctly rounded* exact value: ulp errors per input
  region (max, mean, histogram, % correctly rounded, worst inputs) and absolute / relative
  errors against the float64 exact value.
* :func:`dense_errors`: absolute and relative error of the float32 result on a dense uniform
  float32 grid.
* :func:`render_markdown` / :func:`to_json`: the reports as markdown tables / plain dicts.
* :func:`plot_abs_error`: absolute error against x at every bfloat16 (or float16) input of a
  range, one line per approximation, log scale (as the paper's Figures 4 and 5).

The correctly rounded reference of a (function, format) pair is computed once per process and
kept (``functools.cache``): it takes ~0.02 s (the float64 reference decides all but a few
hundred inputs, which mpmath settles), so no on-disk cache is needed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import reference, rounding

F32 = np.float32
F64 = np.float64

FORMATS = ("bfloat16", "float16")
# (label, predicate of the float64 inputs); the same regions as rounding.region_table.
DEFAULT_REGIONS = rounding.REGIONS
# ulp-error histogram bins: (label, lowest, highest), inclusive.
HIST_BINS = (
    ("0", 0, 0),
    ("1", 1, 1),
    ("2", 2, 2),
    ("3-4", 3, 4),
    ("5-8", 5, 8),
    ("9-16", 9, 16),
    (">16", 17, math.inf),
)
N_WORST = 5

Approx = Callable[[np.ndarray], np.ndarray]


# ---------------------------------------------------------------- inputs and rounding


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    return fmt


def all_finite(fmt: str) -> np.ndarray:
    """Every finite value of ``fmt`` ('bfloat16' | 'float16') as float32, in bit-pattern order
    (0x0000 ... 0x7FFF then 0x8000 ... 0xFFFF, infinities and NaNs left out; +0 and -0 both in).
    """
    bits = np.arange(1 << 16, dtype=np.uint32)
    if _check_format(fmt) == "bfloat16":
        with np.errstate(invalid="ignore"):
            x = (bits << np.uint32(16)).view(F32)
    else:
        x = bits.astype(np.uint16).view(np.float16).astype(F32)
    return x[np.isfinite(x)]


def round_output(y, fmt: str) -> np.ndarray:
    """float32 values rounded to nearest even in ``fmt``, returned as float64 (exact).

    bfloat16: integer rounding of the float32 bits at bit 16 (add 0x7FFF plus the bit that
    becomes the last one), which carries overflow into infinity; NaN stays NaN. float16: numpy's
    float32 -> float16 conversion (round to nearest even, subnormals and overflow included;
    ``tests/test_report.py`` checks it against exact rational rounding).
    """
    y = np.asarray(y, F32)
    if _check_format(fmt) == "float16":
        with np.errstate(over="ignore", invalid="ignore"):
            return y.astype(np.float16).astype(F64)
    u = y.view(np.uint32).astype(np.uint64)
    r = ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) << 16
    out = r.astype(np.uint32).view(F32).astype(F64)
    return np.where(np.isnan(y), np.nan, out)


def _function_name(fn: str) -> str:
    if not isinstance(fn, str):
        raise TypeError(f"fn must be a name of rounding.FUNCTIONS, got {fn!r}")
    # A name of FUNCTIONS wins over a GELU mode of the same spelling ('tanh' is the function).
    if fn not in rounding.FUNCTIONS and fn in reference.GELU_MODES:
        fn = rounding.gelu_function(fn)
    if fn not in rounding.FUNCTIONS:
        raise ValueError(f"fn must be one of {tuple(rounding.FUNCTIONS)}, got {fn!r}")
    return fn


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@functools.cache
def _reference_cached(fn: str, fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x32 = all_finite(fmt)
    x64 = x32.astype(F64)
    # The (float64, mpmath) pair, not the name: rounding's own name lookup would read 'tanh'
    # as the GELU mode.
    pair = rounding.FUNCTIONS[fn]
    cr = rounding.correctly_rounded(x64, fmt, pair)
    with np.errstate(all="ignore"):
        exact = np.asarray(pair[0](x64), F64)
    return _readonly(x32), _readonly(cr), _readonly(exact)


def reference_table(fn: str, fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(every finite input as float32, fn correctly rounded to fmt, fn in float64), read-only;
    computed once per (fn, fmt) and process."""
    return _reference_cached(_function_name(fn), _check_format(fmt))


def clear_cache() -> None:
    """Forget the cached correctly rounded references (for timing a cold run)."""
    _reference_cached.cache_clear()


# ---------------------------------------------------------------- regions

RegionSpec = tuple[str, Callable[[np.ndarray], np.ndarray] | tuple[float, float]]


def _regions(regions: Iterable[RegionSpec] | None) -> list[tuple[str, Callable]]:
    """Normalize regions: (label, predicate of float64 x) or (label, (lo, hi)) for lo <= x < hi."""
    out = []
    for label, sel in DEFAULT_REGIONS if regions is None else regions:
        if callable(sel):
            out.append((str(label), sel))
        else:
            lo, hi = sel
            out.append((str(label), lambda x, lo=lo, hi=hi: (x >= lo) & (x < hi)))
    return out


# ---------------------------------------------------------------- exhaustive report


@dataclass(frozen=True)
class Worst:
    x: float
    got: float
    want: float
    ulps: int


@dataclass
class RegionStats:
    """ulp errors (against the correctly rounded value) and absolute / relative errors (against
    the float64 exact value) of the inputs of one region.

    ``count`` includes inputs whose result is NaN (``nan_outputs``, histogram bin 'NaN'): they
    count as not correctly rounded, and the other ulp and error statistics leave them out.
    ``max_rel`` is over the inputs whose correctly rounded value is nonzero (so a subnormal
    result flushed to zero counts as a relative error of 1).
    """

    region: str
    count: int
    max_ulp: int
    mean_ulp: float
    frac_correctly_rounded: float
    histogram: dict[str, int]
    worst: list[Worst]
    max_abs: float
    mean_abs: float
    max_rel: float
    nan_outputs: int = 0


@dataclass
class ExhaustiveReport:
    """The exhaustive report of one approximation, one function and one 16-bit format.

    The per-input arrays (inputs, rounded results, correctly rounded values, ulp errors; -1 for
    NaN results) are kept for further analysis but left out of ``to_json``.
    """

    fn: str
    fmt: str
    label: str
    regions: list[RegionStats]
    x: np.ndarray = field(repr=False)
    got: np.ndarray = field(repr=False)
    want: np.ndarray = field(repr=False)
    ulps: np.ndarray = field(repr=False)

    def region(self, label: str) -> RegionStats:
        for r in self.regions:
            if r.region == label:
                return r
        raise KeyError(f"no region {label!r} (have {[r.region for r in self.regions]})")

    @property
    def max_ulp(self) -> int:
        return max((r.max_ulp for r in self.regions), default=0)


def _histogram(d: np.ndarray, n_nan: int) -> dict[str, int]:
    h = {label: int(np.count_nonzero((d >= lo) & (d <= hi))) for label, lo, hi in HIST_BINS}
    h["NaN"] = n_nan
    return h


def _region_stats(label, m, x, got, want, exact, ulps) -> RegionStats:
    nan = m & np.isnan(got)
    ok = m & ~nan
    d = ulps[ok]
    g, w, e, xs = got[ok], want[ok], exact[ok], x[ok]
    with np.errstate(invalid="ignore"):
        abs_err = np.where(g == e, 0.0, np.abs(g - e))  # inf == inf: no error
    rel_mask = w != 0
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = abs_err[rel_mask] / np.abs(e[rel_mask])
    worst = []
    if d.size:
        order = np.lexsort((-np.nan_to_num(abs_err, nan=np.inf), -d))[:N_WORST]
        worst = [Worst(float(xs[i]), float(g[i]), float(w[i]), int(d[i])) for i in order]
    return RegionStats(
        region=label,
        count=int(m.sum()),
        max_ulp=int(d.max()) if d.size else 0,
        mean_ulp=float(d.mean()) if d.size else 0.0,
        frac_correctly_rounded=float(np.count_nonzero(d == 0) / m.sum()) if m.any() else 1.0,
        histogram=_histogram(d, int(nan.sum())),
        worst=worst,
        max_abs=float(abs_err.max()) if d.size else 0.0,
        mean_abs=rounding.exact_mean(abs_err) if d.size else 0.0,
        max_rel=float(rel.max()) if rel.size else 0.0,
        nan_outputs=int(nan.sum()),
    )


def _evaluate(approx: Approx, x32: np.ndarray) -> np.ndarray:
    y = np.asarray(approx(x32.copy()))
    if y.shape != x32.shape:
        raise ValueError(f"approx returned shape {y.shape} for inputs of shape {x32.shape}")
    return y.astype(F32)


def exhaustive(
    approx: Approx,
    fn: str = "gelu",
    fmt: str = "bfloat16",
    regions: Iterable[RegionSpec] | None = None,
    label: str = "",
) -> ExhaustiveReport:
    """Every finite ``fmt`` input through ``approx`` (in float32), the result rounded to ``fmt``,
    compared with ``fn`` correctly rounded to ``fmt``, per input region.

    ``regions``: (label, predicate of float64 x) or (label, (lo, hi)) meaning lo <= x < hi;
    default x < -3, -3 <= x < 0, x >= 0. Inputs where the exact value is NaN are left out.
    """
    fn = _function_name(fn)
    x32, want, exact = reference_table(fn, fmt)
    got = round_output(_evaluate(approx, x32), fmt)
    x = x32.astype(F64)
    valid = ~np.isnan(want)
    ok = valid & ~np.isnan(got)
    ulps = np.full(x.shape, -1, np.int64)
    ulps[ok] = rounding.ulp_distance(got[ok], want[ok], fmt)
    stats = [
        _region_stats(name, valid & np.asarray(pred(x), bool), x, got, want, exact, ulps)
        for name, pred in _regions(regions)
    ]
    return ExhaustiveReport(fn, fmt, label, stats, x, got, want, ulps)


def sweep(
    approx: Approx,
    fn: str = "gelu",
    formats: Sequence[str] = FORMATS,
    regions: Iterable[RegionSpec] | None = None,
    label: str = "",
) -> list[ExhaustiveReport]:
    """:func:`exhaustive` for each format (default bfloat16 and float16)."""
    regions = None if regions is None else list(regions)
    return [exhaustive(approx, fn, fmt, regions, label) for fmt in formats]


# ---------------------------------------------------------------- dense float32 grid


@dataclass
class DenseReport:
    """Errors of ``approx`` in float32 on a uniform grid (the grid values rounded to float32)
    against the float64 exact function; ``max_rel`` over the points where it is nonzero."""

    fn: str
    lo: float
    hi: float
    n: int
    max_abs: float
    mean_abs: float
    argmax_abs: float
    max_rel: float
    argmax_rel: float
    label: str = ""


def dense_errors(
    approx: Approx,
    fn: str = "gelu",
    lo: float = -6.0,
    hi: float = 6.0,
    n: int = 1_000_001,
    label: str = "",
) -> DenseReport:
    fn = _function_name(fn)
    x32 = np.linspace(lo, hi, n).astype(F32)
    x64 = x32.astype(F64)
    with np.errstate(all="ignore"):
        exact = np.asarray(rounding.FUNCTIONS[fn][0](x64), F64)
    got = _evaluate(approx, x32).astype(F64)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.where(got == exact, 0.0, np.abs(got - exact))
        nz = exact != 0
        rel = np.where(nz, err / np.where(nz, np.abs(exact), 1.0), 0.0)
    err = np.where(np.isnan(err), np.inf, err)  # a NaN result is an infinite error
    rel = np.where(np.isnan(rel), np.inf, rel)
    i, j = int(np.argmax(err)), int(np.argmax(rel))
    return DenseReport(
        fn=fn,
        lo=float(lo),
        hi=float(hi),
        n=int(n),
        max_abs=float(err[i]),
        mean_abs=rounding.exact_mean(err),
        argmax_abs=float(x64[i]),
        max_rel=float(rel[j]),
        argmax_rel=float(x64[j]),
        label=label,
    )


# ---------------------------------------------------------------- output


def _jsonable(v):
    if isinstance(v, float | np.floating):
        v = float(v)
        return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v


def to_json(report) -> dict | list:
    """A report (or a list of them) as plain JSON-able data; non-finite floats as strings."""
    if isinstance(report, list | tuple):
        return [to_json(r) for r in report]
    if isinstance(report, ExhaustiveReport):
        regions = []
        for r in report.regions:
            d = {k: getattr(r, k) for k in RegionStats.__dataclass_fields__ if k != "worst"}
            d["worst"] = [w.__dict__ for w in r.worst]
            regions.append(d)
        return _jsonable(
            {
                "kind": "exhaustive",
                "fn": report.fn,
                "format": report.fmt,
                "label": report.label,
                "max_ulp": report.max_ulp,
                "regions": regions,
            }
        )
    if isinstance(report, DenseReport):
        return _jsonable({"kind": "dense", **report.__dict__})
    raise TypeError(f"not a report: {type(report).__name__}")


def _g(v: float) -> str:
    return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def render_markdown(report, worst: bool = False) -> str:
    """Markdown: per exhaustive report a table with one row per region (ulp statistics,
    histogram, absolute / relative errors); dense reports as one table. ``worst`` adds each
    region's worst inputs."""
    reports = list(report) if isinstance(report, list | tuple) else [report]
    parts = []
    dense = [r for r in reports if isinstance(r, DenseReport)]
    for r in reports:
        if isinstance(r, DenseReport):
            continue
        if not isinstance(r, ExhaustiveReport):
            raise TypeError(f"not a report: {type(r).__name__}")
        title = f"{r.label}: " if r.label else ""
        bins = [b[0] for b in HIST_BINS]
        has_nan = any(s.nan_outputs for s in r.regions)
        cols = ["region", "inputs", "max ulp", "mean ulp", "% CR", *(f"{b} ulp" for b in bins)]
        cols += (["NaN"] if has_nan else []) + ["max abs", "mean abs", "max rel", "worst x"]
        lines = [
            f"#### {title}{r.fn}, every finite {r.fmt} input",
            "",
            "| " + " | ".join(cols) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|",
        ]
        for s in r.regions:
            cells = [s.region, str(s.count), str(s.max_ulp), f"{s.mean_ulp:.4f}"]
            cells.append(f"{100 * s.frac_correctly_rounded:.2f}")
            cells += [str(s.histogram[b]) for b in bins]
            cells += [str(s.nan_outputs)] if has_nan else []
            cells += [_g(s.max_abs), _g(s.mean_abs), _g(s.max_rel)]
            cells.append(f"{s.worst[0].x:.6g}" if s.worst else "-")
            lines.append("| " + " | ".join(cells) + " |")
        if worst:
            lines += [
                "",
                "| region | x | got | correctly rounded | ulps |",
                "|---|---:|---:|---:|---:|",
            ]
            for s in r.regions:
                for w in s.worst:
                    lines.append(f"| {s.region} | {w.x!r} | {w.got!r} | {w.want!r} | {w.ulps} |")
        parts.append("\n".join(lines))
    if dense:
        lines = [
            "| approximation | fn | grid | max abs | at x | mean abs | max rel | at x |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for d in dense:
            lines.append(
                f"| {d.label or '-'} | {d.fn} | [{d.lo:g}, {d.hi:g}], {d.n} | {d.max_abs:.3e} | "
                f"{d.argmax_abs:.6g} | {d.mean_abs:.3e} | {d.max_rel:.3e} | {d.argmax_rel:.6g} |"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- figure


def plot_abs_error(
    curves: Mapping[str, Approx] | Sequence[tuple[str, Approx]],
    fmt: str = "bfloat16",
    path: str | Path | None = None,
    *,
    fn: str = "gelu",
    lo: float = -6.0,
    hi: float = 6.0,
    round_result: bool = False,
    floor: float = 1e-12,
    title: str | None = None,
):
    """|approx(x) - fn(x)| at every ``fmt`` input in [lo, hi], one line per labelled curve, on a
    log y axis (errors below ``floor``, exact zeros included, are drawn at ``floor``).

    The error is of the float32 result (``round_result=True``: of the result rounded to
    ``fmt``) against the float64 exact value. Returns the matplotlib Figure (Agg canvas, no
    display); with ``path``, also saves it as PNG there (parent folders created).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fn = _function_name(fn)
    items = list(curves.items()) if isinstance(curves, Mapping) else list(curves)
    x32, _, exact = reference_table(fn, fmt)
    sel = (x32 >= lo) & (x32 <= hi)
    order = np.argsort(x32[sel], kind="stable")
    xs, ex = x32[sel][order], exact[sel][order]
    fig = Figure(figsize=(7.0, 4.2), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, approx in items:
        y = _evaluate(approx, xs)
        got = round_output(y, fmt) if round_result else y.astype(F64)
        with np.errstate(invalid="ignore"):
            err = np.where(got == ex, 0.0, np.abs(got - ex))
        ax.plot(xs, np.maximum(np.nan_to_num(err, nan=np.inf), floor), lw=0.8, label=str(name))
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"x (every {fmt} value in [{lo:g}, {hi:g}])")
    ax.set_ylabel(f"|error| vs {fn} (float64)")
    ax.set_title(title if title is not None else f"Absolute error of {fn} approximations")
    ax.grid(True, which="major", alpha=0.3)
    if items:
        ax.legend(fontsize=8)
    return save_png(fig, path)


def save_png(fig, path: str | Path | None):
    """Lay out ``fig`` and, when ``path`` is given, save it there as PNG (folders created)."""
    fig.tight_layout()
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
    return fig
