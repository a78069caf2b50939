"""Tables and figures of the benchmark, drawn from its long-format results file.

``python -m experiments bench`` appends one JSON object per timed row to a file (default
``results/bench.jsonl``); everything here reads such rows (a path or a list of dicts), so a
notebook draws the same tables and plots as the CLI:

    from experiments import bench_report as br
    rows = br.load("results/bench.jsonl")           # the last run in the file
    print(br.protocol_table(rows))
    br.plot_bars(rows, "forward", "fig/bars_forward.png")
    br.plot_sweep(rows, "forward", "fig/sweep_forward.png")
    br.plot_degrees(rows, "fig/degrees.png")

Ratios (``add_ratios``): within a group (bench, kernel, direction, dtype, size, threads,
device, out mode), ``vs_turbogelu`` = p50 / p50 of the "turbogelu" row (the seed's "speedup vs
turbo": above 1, turbogelu is faster), ``limit_us`` = the fastest limit row of the group (for
``out=`` and in place: of the ``out=`` limit rows), ``per_limit`` = p50 / limit_us.
No torch and no matplotlib at import.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import records

SEED_CSV = Path(__file__).resolve().parents[1] / "data" / "seeds" / "turbogelu_bench.csv"
DIRECTIONS = ("forward", "backward")
DTYPE_ORDER = ("float32", "float16", "bfloat16", "float64")
PROTOCOL_ORDER = (
    "torch exact",
    "torch approx",
    "turbogelu",
    "turbogelu (poly)",
    "turbogelu (Estrin)",
    "turbogelu (cells)",
    "torch exact (oneDNN off)",
    "torch.compile exact",
    "limit: copy",
    "limit: stream copy",
    "limit: mul",
    "limit: stream read2",
)


def alone_range(row: dict, fmt) -> str:
    """A checked row's alone medians as "lo-hi" in us (one median in runs recorded before the
    check had repeats), each written by ``fmt``."""
    alone = row.get("alone_p50s_us") or [row["alone_p50_us"]]
    lo, hi = min(alone), max(alone)
    return fmt(lo) if lo == hi else f"{fmt(lo)}-{fmt(hi)}"


# ---------------------------------------------------------------- loading


def load(path: str | Path, run: str | None = "last") -> list[dict]:
    """The rows of ``path``: of its last run (``run="last"``), of one run id, or all (None)."""
    rows = records.read_jsonl(path)
    if run is None or not rows:
        return rows
    if run == "last":
        run = rows[-1].get("run")
    return [r for r in rows if r.get("run") == run]


def _rows(src) -> list[dict]:
    return load(src) if isinstance(src, (str, Path)) else list(src)


def _group(r: dict, mode: str | None = None) -> tuple:
    return (
        r.get("bench"),
        r.get("kernel"),  # the family's functions share a group's other labels
        r.get("direction"),
        r.get("dtype"),
        r.get("size"),
        r.get("threads"),
        r.get("device", "cpu"),
        r.get("out_mode", "alloc") if mode is None else mode,
        r.get("run"),
    )


def add_ratios(rows: Iterable[dict]) -> list[dict]:
    """Copies of the rows with ``vs_turbogelu``, ``limit_us``, ``per_limit``, ``ns_per_elem``."""
    rows = [dict(r) for r in rows]
    turbo, limit = {}, defaultdict(list)
    for r in rows:
        if r.get("method") == "turbogelu":
            turbo[_group(r)] = r["p50_us"]
        if r.get("provider") == "limit":
            limit[_group(r)].append(r["p50_us"])
    for r in rows:
        mode = r.get("out_mode", "alloc")
        t = turbo.get(_group(r))
        lims = limit.get(_group(r, "out" if mode == "inplace" else mode))
        r["vs_turbogelu"] = r["p50_us"] / t if t else None
        r["limit_us"] = min(lims) if lims else None
        r["per_limit"] = r["p50_us"] / r["limit_us"] if lims else None
        r["ns_per_elem"] = 1e3 * r["p50_us"] / r["size"] if r.get("size") else None
    return rows


# ---------------------------------------------------------------- tables


def fmt_us(t: float | None) -> str:
    if t is None:
        return ""
    return f"{t:.0f}" if t >= 1000 else f"{t:.1f}" if t >= 10 else f"{t:.2f}"


def _x(r: float | None) -> str:
    return "" if r is None else f"{r:.2f}x"


def _r(r: float | None) -> str:
    return "" if r is None else f"{r:.2f}"


def _order(method: str) -> int:
    return PROTOCOL_ORDER.index(method) if method in PROTOCOL_ORDER else len(PROTOCOL_ORDER)


def protocol_table(src) -> str:
    """The seed's table (direction, dtype, method, median us/op, p5, p95, speedup vs turbo)
    with the limit ratio beside every row."""
    rows = [r for r in add_ratios(_rows(src)) if r.get("bench") == "protocol"]
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    rows.sort(
        key=lambda r: (
            DIRECTIONS.index(r["direction"]),
            dtypes.index(r["dtype"]),
            _order(r["method"]),
        )
    )
    lines = [
        "| direction | dtype | method | median us/op | p5 | p95 | speedup vs turbo | / limit |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        speed = "-" if r["method"] == "turbogelu" else _x(r["vs_turbogelu"])
        lines.append(
            f"| {r['direction']} | {r['dtype']} | {r['method']} | {fmt_us(r['p50_us'])}"
            f" | {fmt_us(r['p5_us'])} | {fmt_us(r['p95_us'])} | {speed}"
            f" | {_r(r['per_limit'])} |"
        )
    return "\n".join(lines)


def protocol_notes(src) -> str:
    """What a reader must know beside the protocol table: torch.compile vs eager, the wall /
    CPU time ratio."""
    rows = add_ratios(_rows(src))
    rows = [r for r in rows if r.get("bench") == "protocol"]
    out = [
        "speedup vs turbo = method median / turbogelu median (> 1: turbogelu is faster);"
        " / limit = median / the fastest limit row of the same direction and dtype (copy or"
        " streaming copy for the forward, mul or streaming 2-in-1-out for the backward)."
    ]
    eager = {
        (r["direction"], r["dtype"]): r["p50_us"] for r in rows if r["method"] == "torch exact"
    }
    slower = [
        f"{r['direction']} {r['dtype']} ({r['p50_us'] / eager[(r['direction'], r['dtype'])]:.2f}x)"
        for r in rows
        if r["method"] == "torch.compile exact"
        and (r["direction"], r["dtype"]) in eager
        and r["p50_us"] > eager[(r["direction"], r["dtype"])]
    ]
    if slower:
        out.append("torch.compile is slower than eager F.gelu here: " + ", ".join(slower) + ".")
    programs = sorted(
        {
            (r["device"] if "device" in r else "cpu", r["program"])
            for r in rows
            if r.get("method") == "turbogelu" and r.get("program")
        }
    )
    if programs:
        ran = ", ".join(f"{p} ({d})" if len(programs) > 1 else p for d, p in programs)
        out.append(
            f"turbogelu = the default program of this machine: {ran}; turbogelu (poly) and"
            " (cells) force one, (Estrin) is the polynomial by Estrin."
        )
    if rows:
        worst = max(rows, key=lambda r: r["p50_us"] / max(r["cpu_p50_us"], 1e-9))
        ratio = worst["p50_us"] / max(worst["cpu_p50_us"], 1e-9)
        out.append(
            f"wall / thread CPU time (median): at most {ratio:.2f} ({worst['direction']}"
            f" {worst['dtype']} {worst['method']}); well above 1 means the thread was"
            " descheduled or waited on other threads."
        )
    return "\n".join(out)


def size_label(n: int) -> str:
    """65536 -> "64K", 1 << 26 -> "64M" (other numbers as they are)."""
    for unit, v in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= v and n % v == 0:
            return f"{n // v}{unit}"
    return str(n)


_size_label = size_label


def alone_summary(src, tolerance: float = 0.10) -> str:
    """One line on the protocol's baseline rows timed alone in fresh processes (the rows'
    ``alone_p50s_us`` / ``baseline_suspect`` / ``alone_error``, see ``bench_alone``): how many
    were checked, the largest spread between the alone timings of one row, and each row more
    than ``tolerance`` outside its alone range (or whose check failed)."""
    rows = [r for r in _rows(src) if "alone_p50_us" in r or "alone_error" in r]
    if not rows:
        return "not checked"
    bad = [r for r in rows if r.get("baseline_suspect")]
    failed = [r for r in rows if "alone_error" in r]
    text = f"{len(rows) - len(failed)} checked"
    spreads = [r["alone_spread"] for r in rows if "alone_spread" in r]
    if spreads:
        text += f" (alone timings of one row up to {100 * max(spreads):.0f}% apart)"
    if bad:
        text += (
            f", {len(bad)} more than {100 * tolerance:.0f}% outside their alone range"
            " (baseline_suspect): "
            + "; ".join(
                f"{r['direction']} {r['dtype']} {r['method']} {fmt_us(r['p50_us'])} us"
                f" interleaved vs {alone_range(r, fmt_us)} us alone"
                for r in bad
            )
        )
    else:
        text += f", all within {100 * tolerance:.0f}% of their alone range"
    if failed:
        text += "; check failed for: " + "; ".join(
            f"{r['direction']} {r['dtype']} {r['method']} ({r['alone_error']})" for r in failed
        )
    return text


def _dtype_key(t: str) -> int:
    return DTYPE_ORDER.index(t) if t in DTYPE_ORDER else len(DTYPE_ORDER)


def sweep_table(src) -> str:
    """Per direction x size x dtype x threads x out mode: turbogelu, torch exact, the limit
    (us per call), turbogelu / limit and torch exact / turbogelu. (float32 has every row;
    the 16-bit dtypes only turbogelu's and the limit's out= rows at the DRAM sizes.)"""
    rows = [r for r in add_ratios(_rows(src)) if r.get("bench") == "sweep"]
    by = defaultdict(dict)
    for r in rows:
        key = (r["direction"], r["size"], r.get("dtype", "float32"), r["threads"], r["out_mode"])
        by[key][r["method"]] = r
    lines = [
        "| direction | size | dtype | threads | output | turbogelu us | torch exact us | limit us"
        " | turbogelu / limit | torch / turbogelu | turbogelu ns/elem |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    modes = ("alloc", "out", "inplace")
    for key in sorted(
        by,
        key=lambda k: (DIRECTIONS.index(k[0]), k[1], _dtype_key(k[2]), k[3], modes.index(k[4])),
    ):
        d, size, dtype, threads, mode = key
        m = by[key]
        tg, th = m.get("turbogelu"), m.get("torch exact")
        ref = tg or next(iter(m.values()))
        lines.append(
            f"| {d} | {_size_label(size)} | {dtype} | {threads} | {mode}"
            f" | {fmt_us(tg and tg['p50_us'])} | {fmt_us(th and th['p50_us'])}"
            f" | {fmt_us(ref['limit_us'])} | {_r(tg and tg['per_limit'])}"
            f" | {_r(th and th['vs_turbogelu'])} | {_r(tg and tg['ns_per_elem'])} |"
        )
    return "\n".join(lines)


def degree_table(src) -> str:
    """Per direction x degree: operations and time by Horner and by Estrin, / limit."""
    rows = [r for r in add_ratios(_rows(src)) if r.get("bench") == "degree"]
    by = defaultdict(dict)
    ref = {}
    for r in rows:
        if r.get("degree") is not None and r["method"].startswith("poly_gelu"):
            by[(r["direction"], r["degree"])][r["scheme"]] = r
        elif r["method"].startswith("turbogelu"):
            ref[(r["direction"], r["method"])] = r
    lines = [
        "| direction | degree | ops Horner | Horner us | / limit | ops Estrin | Estrin us"
        " | / limit | max abs error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (d, deg), s in sorted(by.items(), key=lambda kv: (DIRECTIONS.index(kv[0][0]), kv[0][1])):
        h, e = s.get("horner"), s.get("estrin")
        err = (h or e).get("max_abs_error")
        lines.append(
            f"| {d} | {deg} | {h['op_count'] if h else ''} | {fmt_us(h and h['p50_us'])}"
            f" | {_r(h and h['per_limit'])} | {e['op_count'] if e else ''}"
            f" | {fmt_us(e and e['p50_us'])} | {_r(e and e['per_limit'])}"
            f" | {'' if err is None else f'{err:.1e}'} |"
        )
    for (d, _), r in sorted(ref.items(), key=lambda kv: DIRECTIONS.index(kv[0][0])):
        lines.append(
            f"| {d} | {_shipped_label(r)} | | {fmt_us(r['p50_us'])} | {_r(r['per_limit'])}"
            " | | | | |"
        )
    return "\n".join(lines)


def _shipped_label(r: dict) -> str:
    """What a degree-part row of the shipped op timed. Files before the ``program`` label
    timed the default op (then the polynomial) with its autograd dispatch."""
    program = r.get("program")
    if program is None:
        return "shipped op (degree 8, Horner; with autograd dispatch)"
    if program == "poly":
        return f"shipped op, poly program (degree {r.get('degree') or 8}, Horner)"
    default = " (the default)" if r["method"] == "turbogelu" else ""
    return f"shipped op, {program} program{default}"


# ---------------------------------------------------------------- figures


def _figure(w: float, h: float, ncols: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def plot_bars(src, direction: str, out: str | Path | None = None, *, device: str | None = None):
    """The seed's bar chart: median us/op per method, grouped by dtype, p5-p95 as error bars;
    limit rows hatched."""
    rows = [
        r
        for r in _rows(src)
        if r.get("bench") == "protocol"
        and r["direction"] == direction
        and (device is None or r.get("device", "cpu") == device)
    ]
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    methods = sorted({r["method"] for r in rows}, key=_order)
    ncol = min(4, max(len(methods), 1))
    legend_h = 0.22 * -(-len(methods) // ncol)  # the legend's rows, below the axes
    fig, (ax,) = _figure(max(6.0, 1.2 + 0.35 * len(methods) * len(dtypes)), 4.2 + legend_h)
    width = 0.8 / max(len(methods), 1)
    for j, m in enumerate(methods):
        xs, ys, lo, hi = [], [], [], []
        for i, t in enumerate(dtypes):
            r = next((r for r in rows if r["dtype"] == t and r["method"] == m), None)
            if r is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(r["p50_us"])
            lo.append(r["p50_us"] - r["p5_us"])
            hi.append(r["p95_us"] - r["p50_us"])
        ax.bar(
            xs,
            ys,
            width,
            yerr=[lo, hi],
            capsize=2,
            label=m,
            hatch="//" if m.startswith("limit") else None,
            edgecolor="black" if m.startswith("limit") else None,
            linewidth=0.5,
        )
    ax.set_xticks(range(len(dtypes)))
    ax.set_xticklabels(dtypes)
    ax.set_ylabel("median us per call (p5-p95)")
    size = rows[0]["size"] if rows else "?"
    ax.set_title(
        f"GELU {direction}, {size} elements, {rows[0]['threads'] if rows else '?'} thread(s)"
    )
    # below the axes: inside, it covered a bar whatever the corner
    ax.legend(fontsize=7, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    return records.save_png(fig, out)


def plot_sweep(src, direction: str, out: str | Path | None = None):
    """Time per element against size (log-log), one panel per thread count: turbogelu and
    torch exact per output mode, the limit drawn as a dashed line per output mode."""
    rows = [
        r
        for r in add_ratios(_rows(src))
        if r.get("bench") == "sweep"
        and r["direction"] == direction
        and r.get("dtype", "float32") == "float32"
    ]
    threads = sorted({r["threads"] for r in rows}) or [1]
    fig, axes = _figure(5.0 * len(threads), 4.0, len(threads))
    styles = {"alloc": "-", "out": "--", "inplace": ":"}
    for ax, t in zip(axes, threads, strict=True):
        sub = [r for r in rows if r["threads"] == t]
        for method, marker in (("turbogelu", "o"), ("torch exact", "s")):
            for mode, ls in styles.items():
                pts = sorted(
                    (r["size"], r["ns_per_elem"])
                    for r in sub
                    if r["method"] == method and r["out_mode"] == mode
                )
                if pts:
                    ax.plot(*zip(*pts, strict=True), ls, marker=marker, label=f"{method} ({mode})")
        for mode in ("alloc", "out"):
            pts = sorted(
                {
                    (r["size"], 1e3 * r["limit_us"] / r["size"])
                    for r in sub
                    if r["out_mode"] == mode and r["limit_us"] is not None
                }
            )
            if pts:
                ax.plot(
                    *zip(*pts, strict=True),
                    styles[mode],
                    color="black",
                    linewidth=2,
                    alpha=0.6,
                    label=f"limit ({mode})",
                )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("elements (float32)")
        ax.set_ylabel("ns per element (median)")
        ax.set_title(f"{direction}, {t} thread(s)")
        ax.legend(fontsize=7)
    return records.save_png(fig, out)


def plot_degrees(src, out: str | Path | None = None):
    """Median us per call against the operation count of P's degree, Horner and Estrin,
    forward and backward, with the limit and the shipped op drawn (the op's polynomial: the
    same kernel as the degree-8 Horner point, with the shipped coefficients; and the
    default program where it is another one). Degree labels: Horner's above and left of its
    points, Estrin's below and right."""
    rows = [r for r in add_ratios(_rows(src)) if r.get("bench") == "degree"]
    fig, axes = _figure(10.0, 4.8, 2)
    for ax, d in zip(axes, DIRECTIONS, strict=True):
        sub = [r for r in rows if r["direction"] == d]
        # Horner's labels up and left of their points, Estrin's down and right: where the
        # two curves meet (same operation count, close times) the labels stay apart
        for scheme, marker, (dx, dy, ha, va) in (
            ("horner", "o", (-3, 3, "right", "bottom")),
            ("estrin", "s", (3, -3, "left", "top")),
        ):
            pts = sorted(
                (r["op_count"], r["p50_us"], r["degree"])
                for r in sub
                if r["method"].startswith("poly_gelu") and r["scheme"] == scheme
            )
            if pts:
                xs, ys, degs = zip(*pts, strict=True)
                line = ax.plot(xs, ys, "-", marker=marker, label=f"poly_gelu, {scheme}")
                for x, y, deg in pts:
                    ax.annotate(
                        str(deg), (x, y), fontsize=6, xytext=(dx, dy), textcoords="offset points",
                        ha=ha, va=va, color=line[0].get_color(),
                    )  # fmt: skip
        lims = [r["limit_us"] for r in sub if r.get("limit_us")]
        if lims:
            ax.axhline(statistics.median(lims), color="black", ls="--", label="limit")
        shipped = [r for r in sub if r["method"].startswith("turbogelu")]
        for r, ls in zip(sorted(shipped, key=lambda r: r["method"]), (":", "-."), strict=False):
            ax.axhline(r["p50_us"], color="gray", ls=ls, label=_shipped_label(r))
        ax.set_xlabel("floating-point operations per element (labels: degree)")
        ax.set_ylabel("median us per call")
        size = sub[0]["size"] if sub else "?"
        ax.set_title(f"{d}, float32, {size} elements, 1 thread")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    return records.save_png(fig, out)


def plot_all(src, out_dir: str | Path) -> list[Path]:
    """Every figure the rows allow, as PNG files in ``out_dir``; returns their paths."""
    rows = _rows(src)
    out_dir = Path(out_dir)
    written = []
    benches = {r.get("bench") for r in rows}
    for d in DIRECTIONS:
        if any(r.get("bench") == "protocol" and r["direction"] == d for r in rows):
            written.append(out_dir / f"bars_{d}.png")
            plot_bars(rows, d, written[-1])
        if any(r.get("bench") == "sweep" and r["direction"] == d for r in rows):
            written.append(out_dir / f"sweep_{d}.png")
            plot_sweep(rows, d, written[-1])
    if "degree" in benches:
        written.append(out_dir / "degrees.png")
        plot_degrees(rows, written[-1])
    return written


def summary_ratios(src) -> list[dict]:
    """The note's ratios per (direction, dtype) of the protocol: turbogelu vs torch exact, vs
    torch approx, and turbogelu / limit (with turbogelu's median, ``turbogelu_p50_us``, and
    its ``program``: None in files written before it was recorded)."""
    rows = add_ratios(_rows(src))
    out = []
    proto = [r for r in rows if r.get("bench") == "protocol"]
    for key in dict.fromkeys((r["direction"], r["dtype"]) for r in proto):
        grp = {r["method"]: r for r in proto if (r["direction"], r["dtype"]) == key}
        tg = grp.get("turbogelu")
        if tg is None:
            continue
        out.append(
            {
                "direction": key[0],
                "dtype": key[1],
                "vs_torch_exact": grp.get("torch exact", {}).get("vs_turbogelu"),
                "vs_torch_approx": grp.get("torch approx", {}).get("vs_turbogelu"),
                "turbogelu_per_limit": tg["per_limit"],
                "turbogelu_p50_us": tg["p50_us"],
                "program": tg.get("program"),
            }
        )
    return out


def ratio_table(src) -> str:
    """``summary_ratios`` as a table: turbogelu's median, its speedup over torch exact and
    torch approx, and its time / the limit, per direction x dtype of the protocol."""
    lines = [
        "| direction | dtype | turbogelu us | vs torch exact | vs torch approx"
        " | turbogelu / limit |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in summary_ratios(src):
        lines.append(
            f"| {r['direction']} | {r['dtype']} | {fmt_us(r['turbogelu_p50_us'])}"
            f" | {_x(r['vs_torch_exact'])} | {_x(r['vs_torch_approx'])}"
            f" | {_r(r['turbogelu_per_limit'])} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- the activation family


def family_summary(src) -> list[dict]:
    """One entry per (function, direction, dtype, size, threads) of the family's rows
    (``bench="family"``, ``experiments.bench_family``): PyTorch's eager median
    (``torch_us``), turbogelu's (``turbogelu_us``), ``speedup`` = PyTorch / turbogelu, the
    fastest limit row (``limit_row``, ``limit_us``), ``per_limit`` = turbogelu / limit, the
    row's ``residency`` and output mode, and ``paper``: the paper's Table 3 figure beside it
    (``bench_family.paper_speedup``; None where the paper has no such row)."""
    from .bench_family import FUNCTIONS, paper_speedup

    rows = [r for r in add_ratios(_rows(src)) if r.get("bench") == "family"]
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        key = (r["function"], r["direction"], r["dtype"], r["size"], r["threads"])
        groups.setdefault(key, {})[r["method"]] = r
    out = []

    def order(k):
        f, d, t, n, th = k
        fi = FUNCTIONS.index(f) if f in FUNCTIONS else len(FUNCTIONS)
        return (fi, f, DIRECTIONS.index(d), _dtype_key(t), n, th)

    for key in sorted(groups, key=order):
        f, d, t, n, th = key
        grp = groups[key]
        tg, native = grp.get("turbogelu"), grp.get("torch eager")
        limits = [r for r in grp.values() if r.get("provider") == "limit"]
        limit = min(limits, key=lambda r: r["p50_us"]) if limits else None
        ref = tg or native or limit
        where = ref.get("residency")
        out.append(
            {
                "function": f,
                "direction": d,
                "dtype": t,
                "size": n,
                "threads": th,
                "out_mode": ref.get("out_mode", "alloc"),
                "residency": where,
                "torch_us": native and native["p50_us"],
                "turbogelu_us": tg and tg["p50_us"],
                "cpu_program": tg and tg.get("cpu_program"),
                "speedup": native["p50_us"] / tg["p50_us"] if tg and native else None,
                "limit_row": limit and limit["method"],
                "limit_us": limit and limit["p50_us"],
                "per_limit": tg["p50_us"] / limit["p50_us"] if tg and limit else None,
                "paper": paper_speedup(f, d, t, n, where or ""),
                "rounds": ref.get("rounds"),
                "cap": ref.get("cap"),
            }
        )
    return out


def _paper(v: float | None) -> str:
    """A figure of the paper, as printed there (three decimals)."""
    return "" if v is None else f"{v:.3f}x"


def family_table(src) -> str:
    """The family's rows as one table: PyTorch's eager op and turbogelu's (median us), the
    ratio PyTorch / turbogelu, the limit row beside it and turbogelu / limit, the row's
    data (cache or DRAM) and the paper's GB200 speedup (Table 3: float16 only, its 4M column
    beside our 4M rows, its 268M (HBM) column beside our DRAM rows; blank where it has no
    row)."""
    from .bench_family import PAPER_MACHINE

    lines = [
        "| function | direction | dtype | size | threads | output | data | PyTorch us"
        f" | turbogelu us | PyTorch / turbogelu | limit row | limit us | turbogelu / limit"
        f" | paper {PAPER_MACHINE} |",
        "|---|---|---|---:|---:|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for e in family_summary(src):
        lines.append(
            f"| {e['function']} | {e['direction']} | {e['dtype']} | {size_label(e['size'])}"
            f" | {e['threads']} | {e['out_mode']} | {e['residency'] or ''}"
            f" | {fmt_us(e['torch_us'])} | {fmt_us(e['turbogelu_us'])} | {_x(e['speedup'])}"
            f" | {(e['limit_row'] or '').removeprefix('limit: ')} | {fmt_us(e['limit_us'])}"
            f" | {_r(e['per_limit'])} | {_paper(e['paper'])} |"
        )
    return "\n".join(lines)


def table3(src) -> str:
    """The paper's Table 3 beside this machine: per direction and function, the paper's
    GB200 float16 speedups (PyTorch / polynomial) at 4M elements (L2) and 268M (HBM) and
    ours (PyTorch / turbogelu, float16) at 4M and at the largest DRAM size of the rows, per
    thread count. Blank where the paper has no row (SwiGLU, softcap, SiLU's backward) or
    the run no float16 rows; the paper's GELU row is set beside GELU's benchmark instead
    (a note under the table)."""
    from .bench_family import FUNCTIONS, PAPER_DTYPE, PAPER_L2_SIZE, PAPER_MACHINE, PAPER_TABLE3

    entries = [e for e in family_summary(src) if e["dtype"] == PAPER_DTYPE]
    threads = sorted({e["threads"] for e in entries}) or [1]
    dram = [e["size"] for e in entries if e["residency"] == "DRAM"]
    big = max(dram) if dram else None
    by = {(e["direction"], e["function"], e["size"], e["threads"]): e for e in entries}
    head = ["direction", "function", "paper's program", f"paper {PAPER_MACHINE} 4M (L2)"]
    head += [f"here 4M, {t} thr" for t in threads]
    head += [f"paper {PAPER_MACHINE} 268M (HBM)"]
    if big is not None:
        head += [f"here {size_label(big)} (DRAM), {t} thr" for t in threads]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|" + "---:|" * (len(head) - 3)]
    for d in DIRECTIONS:
        for f in FUNCTIONS:
            program, l2, hbm = PAPER_TABLE3.get((d, f), ("", None, None))
            cells = [d, f, program, _paper(l2)]
            cells += [_x(by.get((d, f, PAPER_L2_SIZE, t), {}).get("speedup")) for t in threads]
            cells.append(_paper(hbm))
            if big is not None:
                cells += [_x(by.get((d, f, big, t), {}).get("speedup")) for t in threads]
            lines.append("| " + " | ".join(cells) + " |")
    notes = [
        f"The paper's {f.upper()} {d} row ({v[0]}: {_paper(v[1])} at 4M, {_paper(v[2])} at"
        " 268M) is not the family's: GELU's own benchmark (protocol, sweep) times GELU."
        for (d, f), v in PAPER_TABLE3.items()
        if f not in FUNCTIONS
    ]
    notes.append(
        f"paper: {PAPER_MACHINE}, float16, native PyTorch / packed polynomial CUDA kernel;"
        f" here: this CPU, {PAPER_DTYPE}, PyTorch eager / turbogelu (accurate tier)."
    )
    notes.append(
        "Sigmoid's, tanh's and softcap's backward rows time what autograd runs by default, as in"
        " PyTorch: the derivative from the saved result y (turbogelu's"
        " <fn>_backward_from_output, PyTorch's formula), not the paper's direct fits from x;"
        ' turbogelu\'s backward ops from x are the rows "turbogelu from x" of bench.jsonl.'
    )
    cells = sorted({e["function"] for e in entries if e.get("cpu_program") == "cells"})
    if cells:
        notes.append(
            f"turbogelu ran the cells programs (a cubic in each of 32 cells of |x|,"
            f" turbogelu/approx/family_cells.py) for {', '.join(cells)}: this CPU's default"
            " program (AVX-512); the others run their polynomials."
        )
    return "\n".join(lines + [""] + notes)


# ---------------------------------------------------------------- the seeds' published tables


def load_seed_tables(path: str | Path = SEED_CSV) -> list[dict]:
    """The seeds' published benchmark rows (``data/seeds/turbogelu_bench.csv``; lines starting
    with ``#`` are comments naming the source): machine, device, direction, dtype, method,
    median_us, p5_us, p95_us (floats) and speedup_vs_turbo (None on the turbogelu rows)."""
    lines = [ln for ln in Path(path).read_text().splitlines() if ln and not ln.startswith("#")]
    rows = []
    for r in csv.DictReader(lines):
        for k in ("median_us", "p5_us", "p95_us", "speedup_vs_turbo"):
            r[k] = float(r[k]) if r[k] else None
        rows.append(r)
    return rows


def seed_source(path: str | Path = SEED_CSV) -> str:
    """The comment lines of the seeds' table file (where its numbers come from)."""
    lines = Path(path).read_text().splitlines()
    return " ".join(ln.lstrip("# ").strip() for ln in lines if ln.startswith("#"))


def slug(text: str) -> str:
    """A name part for a figure key: "Apple M1 Pro CPU" -> "apple_m1_pro_cpu"."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def seed_table(rows: Sequence[dict], machine: str) -> str:
    """One seed machine's published table in the seed's shape (median, p5, p95, speedup)."""
    lines = [
        "| direction | dtype | method | median us/op | p5 | p95 | speedup vs turbo |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["machine"] == machine:
            lines.append(
                f"| {r['direction']} | {r['dtype']} | {r['method']} | {fmt_us(r['median_us'])}"
                f" | {fmt_us(r['p5_us'])} | {fmt_us(r['p95_us'])}"
                f" | {'-' if r['speedup_vs_turbo'] is None else _x(r['speedup_vs_turbo'])} |"
            )
    return "\n".join(lines)


def _dir_dtype(key: tuple[str, str]) -> tuple:
    d, t = key
    return (DIRECTIONS.index(d), DTYPE_ORDER.index(t) if t in DTYPE_ORDER else len(DTYPE_ORDER), t)


def seed_speedups(rows: Sequence[dict]) -> dict[tuple[str, str, str], dict]:
    """(machine, direction, dtype) -> {"vs_torch_exact", "vs_torch_approx"} of the seeds'
    published speedups."""
    out: dict[tuple[str, str, str], dict] = {}
    for r in rows:
        key = (r["machine"], r["direction"], r["dtype"])
        if r["method"] in ("torch exact", "torch approx"):
            name = "vs_" + r["method"].replace(" ", "_")
            out.setdefault(key, {})[name] = r["speedup_vs_turbo"]
    return out


def speedup_table(src, seed_rows: Sequence[dict], label: str = "this machine") -> str:
    """turbogelu's speedup over torch exact / torch approx per direction x dtype: this run's
    protocol (``src``) beside each seed machine's published figure."""
    mine = {(r["direction"], r["dtype"]): r for r in summary_ratios(src)}
    seeds = seed_speedups(seed_rows)
    machines = list(dict.fromkeys(m for m, _, _ in seeds))
    head = [f"{label}: vs exact", f"{label}: vs approx", f"{label}: / limit"]
    head += [f"{m}: vs exact" for m in machines]
    lines = ["| direction | dtype | " + " | ".join(head) + " |"]
    lines.append("|---|---|" + "---:|" * len(head))
    keys = list(dict.fromkeys([*mine, *((d, t) for _, d, t in seeds)]))
    keys.sort(key=_dir_dtype)
    for d, t in keys:
        r = mine.get((d, t), {})
        cells = [_x(r.get("vs_torch_exact")), _x(r.get("vs_torch_approx"))]
        cells.append(_r(r.get("turbogelu_per_limit")))
        cells += [_x(seeds.get((m, d, t), {}).get("vs_torch_exact")) for m in machines]
        lines.append(f"| {d} | {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_speedups(
    runs: dict[str, list[dict]],
    seed_rows: Sequence[dict],
    out: str | Path | None = None,
):
    """turbogelu's speedup over torch exact (left) and torch approx (right) per direction x
    dtype: one bar per measured run (``runs``: label -> rows) and per seed machine (hatched),
    with 1 (parity) drawn."""
    from matplotlib.ticker import FormatStrFormatter

    series: dict[str, dict] = {}
    for label, rows in runs.items():
        series[label] = {(r["direction"], r["dtype"]): r for r in summary_ratios(rows)}
    seeds = seed_speedups(seed_rows)
    for m, d, t in seeds:
        series.setdefault(f"seed: {m}", {})[(d, t)] = seeds[(m, d, t)]
    keys = sorted({k for s in series.values() for k in s}, key=_dir_dtype)
    fig, axes = _figure(max(10.0, 1.0 * len(keys) + 4.0), 4.4, 2)
    width = 0.8 / max(len(series), 1)
    for ax, what in zip(axes, ("vs_torch_exact", "vs_torch_approx"), strict=True):
        for j, (label, s) in enumerate(series.items()):
            xs = [i - 0.4 + width * (j + 0.5) for i, k in enumerate(keys) if k in s]
            ys = [s[k].get(what) or 0.0 for k in keys if k in s]
            seed = label.startswith("seed: ")
            ax.bar(xs, ys, width, label=label, hatch="//" if seed else None,
                   alpha=0.6 if seed else 1.0, edgecolor="black", linewidth=0.3)  # fmt: skip
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([f"{d}\n{t}" for d, t in keys], fontsize=7)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        ax.tick_params(axis="y", which="minor", labelsize=6)
        ax.set_ylabel(f"turbogelu speedup {what.replace('_', ' ')}")
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].legend(fontsize=6)
    return records.save_png(fig, out)


__all__: Sequence[str] = (
    "add_ratios",
    "alone_summary",
    "degree_table",
    "family_summary",
    "family_table",
    "load",
    "load_seed_tables",
    "plot_all",
    "plot_bars",
    "plot_degrees",
    "plot_speedups",
    "plot_sweep",
    "protocol_notes",
    "protocol_table",
    "ratio_table",
    "seed_source",
    "seed_speedups",
    "seed_table",
    "size_label",
    "slug",
    "speedup_table",
    "summary_ratios",
    "sweep_table",
    "table3",
)
