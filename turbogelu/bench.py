"""Speed benchmark behind ``python -m turbogelu bench``.

Method (the machines this runs on are shared and noisy, so the method is the point):

* Every variant (method x dtype x direction) is timed in the same process, interleaved: each
  round visits every variant once, in an order shuffled per round by a seeded RNG, and times
  one batch of ``calls`` calls with ``time.perf_counter_ns`` (wall) and ``time.thread_time_ns``
  (CPU time of this thread). A slow stretch of the machine thus hits all variants alike
  instead of one of them. Reported: median, p5 and p95 over rounds of the time per call.
* Inputs are made (seeded) before any timing; each call allocates its output, for every
  variant alike. Every variant is warmed up first; the garbage collector is off while timing.
  glibc is told to keep freed memory (see ``steady_malloc``), or a 4 MiB output would cost
  first-touch page faults in some processes and not in others.
* The limit rows are what moving the same bytes costs on this machine: a copy (one input, one
  output) for the forward, ``torch.mul(g, x)`` (two inputs, one output) for the backward.

Modes: ``--quick`` (float32/float16/bfloat16, 30 rounds), the default full run (also
float64, more rounds), and ``--grain`` (1 thread against all threads over sizes, with the
parallel grain set to 1, to choose the default grain). torch is imported inside functions
only, so that importing this module (the CLI does) does not import torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Sequence

DTYPES_QUICK = ("float32", "float16", "bfloat16")
DTYPES_ALL = (*DTYPES_QUICK, "float64")
METHODS = {
    "forward": (
        "turbogelu",
        "turbogelu (Estrin)",
        "torch exact",
        "torch tanh",
        "torch exact (oneDNN off)",
        "copy",
    ),
    "backward": (
        "turbogelu",
        "turbogelu (Estrin)",
        "torch exact",
        "torch tanh",
        "torch exact (oneDNN off)",
        "mul",
    ),
}
LIMIT = {"forward": "copy", "backward": "mul"}
GRAIN_SIZES = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 1 << 20)
GRAIN_ELEMENTS_PER_BATCH = 1 << 21  # --grain: calls per batch = max(--calls, this / size)
# --grain: more threads count as faster at a size when their median is this much faster and
# they won in this share of the rounds (paired: same round, same state of the machine).
GRAIN_MIN_SPEEDUP, GRAIN_MIN_WON = 1.05, 0.75


@dataclasses.dataclass(frozen=True)
class Variant:
    """One timed thing: ``fn()`` called ``calls`` times (default: the run's) per batch, with
    ``context()`` entered around each batch, outside the timed region."""

    key: Hashable
    fn: Callable[[], object]
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    calls: int | None = None


@dataclasses.dataclass
class Timings:
    """Per-call times in ns, one entry per round, keyed by ``Variant.key``."""

    wall: dict[Hashable, list[float]]
    cpu: dict[Hashable, list[float]]


# ---------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    import torch

    import turbogelu.ops  # noqa: F401  (loads the extension)

    backend = next(
        (
            line.split(":", 1)[1].strip()
            for line in torch.__config__.parallel_info().splitlines()
            if line.startswith("ATen parallel backend")
        ),
        "?",
    )
    return {
        "cpu": _cpu_model(),
        "logical_cpus": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "isa": torch.ops.turbogelu._cpu_isa(),
        "isas": list(torch.ops.turbogelu._cpu_isas()),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "parallel_backend": backend,
        "onednn": bool(torch.backends.mkldnn.is_available()),
        "python": platform.python_version(),
    }


def _header(info: dict, extra: str) -> str:
    return (
        f"CPU: {info['cpu']} ({info['logical_cpus']} logical CPUs) | turbogelu ISA: {info['isa']}"
        f" (available: {', '.join(info['isas'])}) | torch {info['torch']}"
        f" | threads: {info['threads']} ({info['parallel_backend']})"
        f" | oneDNN: {'available' if info['onednn'] else 'not available'} | {extra}"
    )


def steady_malloc() -> bool:
    """Make glibc keep freed memory instead of handing it back to the kernel.

    By default glibc serves a large block (a 4 MiB output) by mmap, or trims it off the heap
    when freed, depending on the process's allocation history (its thresholds move), so a
    call's output allocation costs either ~1 us or hundreds of us of first-touch page faults,
    and the same run on the same machine times 1M float32 at 270 or 600 us. Fixed thresholds
    (mmap at 32 MiB, no trimming below 1 GiB) give every call the steady state: memory reused
    from the heap. Returns False where this is not glibc."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_trim_threshold, 1 << 30)) and bool(
            libc.mallopt(m_mmap_threshold, 32 << 20)
        )
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------- timing


def time_interleaved(
    variants: Sequence[Variant], rounds: int, calls: int, *, warmup: int = 3, seed: int = 0
) -> Timings:
    """Time every variant once per round, in a per-round shuffled (seeded) order."""
    if rounds < 1 or calls < 1:
        raise ValueError(f"rounds and calls must be >= 1, got {rounds} and {calls}")
    keys = [v.key for v in variants]
    if len(set(keys)) != len(keys):
        raise ValueError("variant keys must be unique")
    wall: dict[Hashable, list[float]] = {k: [] for k in keys}
    cpu: dict[Hashable, list[float]] = {k: [] for k in keys}
    for v in variants:
        with v.context():
            for _ in range(max(warmup, v.calls or calls)):
                v.fn()
    order = list(variants)
    rng = random.Random(seed)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            rng.shuffle(order)
            for v in order:
                fn, n = v.fn, v.calls or calls
                with v.context():
                    c0 = time.thread_time_ns()
                    t0 = time.perf_counter_ns()
                    for _ in range(n):
                        fn()
                    t1 = time.perf_counter_ns()
                    c1 = time.thread_time_ns()
                wall[v.key].append((t1 - t0) / n)
                cpu[v.key].append((c1 - c0) / n)
    finally:
        if gc_was_enabled:
            gc.enable()
    return Timings(wall, cpu)


def _quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# ---------------------------------------------------------------- variants


def _inputs(dtype: str, size: int, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    x = (torch.randn(size) * 3).to(getattr(torch, dtype))
    g = torch.randn(size).to(getattr(torch, dtype))
    return x, g


def _onednn_off():
    import torch

    # Only the switch: the other flags' defaults would set (and warn about) TF32 and precision.
    return torch.backends.mkldnn.flags(
        enabled=False, deterministic=None, allow_tf32=None, fp32_precision=None
    )


@contextlib.contextmanager
def _estrin():
    """Evaluate the polynomial by Estrin's scheme instead of Horner's (the default)."""
    import torch

    previous = torch.ops.turbogelu._set_poly_scheme("estrin")
    try:
        yield
    finally:
        torch.ops.turbogelu._set_poly_scheme(previous)


def make_variants(direction: str, dtype: str, size: int, *, seed: int = 0) -> list[Variant]:
    """The rows of one (direction, dtype) group, keyed (direction, dtype, method)."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401  (loads the extension)

    x, g = _inputs(dtype, size, seed)
    tg = torch.ops.turbogelu
    aten = torch.ops.aten
    if direction == "forward":
        fns = {
            "turbogelu": lambda: tg.gelu(x),
            "turbogelu (Estrin)": lambda: tg.gelu(x),
            "torch exact": lambda: F.gelu(x),
            "torch tanh": lambda: F.gelu(x, approximate="tanh"),
            "torch exact (oneDNN off)": lambda: F.gelu(x),
            "copy": lambda: torch.empty_like(x).copy_(x),
        }
    elif direction == "backward":
        fns = {
            "turbogelu": lambda: tg.gelu_backward(g, x),
            "turbogelu (Estrin)": lambda: tg.gelu_backward(g, x),
            "torch exact": lambda: aten.gelu_backward(g, x),
            "torch tanh": lambda: aten.gelu_backward(g, x, approximate="tanh"),
            "torch exact (oneDNN off)": lambda: aten.gelu_backward(g, x),
            "mul": lambda: torch.mul(g, x),
        }
    else:
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    assert tuple(fns) == METHODS[direction]

    def context(method: str):
        if method.endswith("(oneDNN off)"):
            return _onednn_off
        if method.endswith("(Estrin)"):
            return _estrin
        return contextlib.nullcontext

    return [Variant((direction, dtype, m), fn, context(m)) for m, fn in fns.items()]


def summarize(variants: Sequence[Variant], timings: Timings) -> list[dict]:
    """One row per (direction, dtype, method) variant, in the variants' order."""
    med = {k: statistics.median(w) for k, w in timings.wall.items()}
    rows = []
    for v in variants:
        direction, dtype, method = v.key
        w = timings.wall[v.key]
        m = med[v.key]
        tg = med.get((direction, dtype, "turbogelu"))
        limit = med.get((direction, dtype, LIMIT[direction]))
        rows.append(
            {
                "direction": direction,
                "dtype": dtype,
                "method": method,
                "median_us": m / 1e3,
                "p5_us": _quantile(w, 0.05) / 1e3,
                "p95_us": _quantile(w, 0.95) / 1e3,
                "cpu_median_us": statistics.median(timings.cpu[v.key]) / 1e3,
                "vs_turbogelu": m / tg if tg else None,
                "per_limit": m / limit if limit else None,
                "rounds": len(w),
            }
        )
    return rows


# ---------------------------------------------------------------- output


def _us(t: float) -> str:
    return f"{t:.0f}" if t >= 1000 else f"{t:.1f}" if t >= 10 else f"{t:.2f}"


def _ratio(r: float | None) -> str:
    return "" if r is None else f"{r:.2f}"


def render_table(rows: Sequence[dict]) -> str:
    lines = [
        "| direction | dtype | method | median us | p5 | p95 | vs turbogelu | / limit |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['direction']} | {r['dtype']} | {r['method']} | {_us(r['median_us'])}"
            f" | {_us(r['p5_us'])} | {_us(r['p95_us'])} | {_ratio(r['vs_turbogelu'])}"
            f" | {_ratio(r['per_limit'])} |"
        )
    return "\n".join(lines)


def _cpu_note(rows: Sequence[dict]) -> str:
    worst = max(rows, key=lambda r: r["median_us"] / max(r["cpu_median_us"], 1e-9))
    ratio = worst["median_us"] / max(worst["cpu_median_us"], 1e-9)
    return (
        f"wall / thread CPU time (median): at most {ratio:.2f} ({worst['direction']}"
        f" {worst['dtype']} {worst['method']}); well above 1 means the thread was descheduled"
        " or waited on other threads."
    )


def _write_jsonl(path: str, rows: Sequence[dict], common: dict) -> None:
    with open(path, "a") as f:
        for r in rows:
            f.write(json.dumps({**common, **r}) + "\n")


# ---------------------------------------------------------------- runs


@contextlib.contextmanager
def _num_threads(n: int):
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


@contextlib.contextmanager
def _parallel_grain(grain: int):
    import torch

    prev = torch.ops.turbogelu._set_parallel_grain(grain)
    try:
        yield
    finally:
        torch.ops.turbogelu._set_parallel_grain(prev)


@contextlib.contextmanager
def _cpu_isa(name: str | None):
    import torch

    if name is None:
        yield
        return
    prev = torch.ops.turbogelu._set_cpu_isa(name)
    try:
        yield
    finally:
        torch.ops.turbogelu._set_cpu_isa(prev)


def run_ops(
    directions: Sequence[str], dtypes: Sequence[str], size: int, rounds: int, calls: int
) -> list[dict]:
    variants = [v for d in directions for t in dtypes for v in make_variants(d, t, size)]
    return summarize(variants, time_interleaved(variants, rounds, calls))


def run_grain(
    sizes: Sequence[int], threads: int, rounds: int, calls: int
) -> tuple[list[dict], int | None, tuple[float, float, float]]:
    """turbogelu float32 forward, 1 thread against ``threads`` threads, grain 1.

    Returns the rows (one per size), the smallest size from which ``threads`` threads are
    ``faster`` at that size and every larger one (or None), and the control: torch's
    F.gelu at the largest size, (1 thread us, ``threads`` threads us, speedup)."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401

    tg = torch.ops.turbogelu
    variants = []
    for size in sizes:
        x, _ = _inputs("float32", size)
        n = max(calls, GRAIN_ELEMENTS_PER_BATCH // size)
        for t in (1, threads):
            variants.append(
                Variant((size, t), lambda x=x: tg.gelu(x), lambda t=t: _num_threads(t), n)
            )
    # Control: torch's own parallel op, to tell "turbogelu is not parallel" from "the machine
    # has no second CPU to give".
    xc, _ = _inputs("float32", sizes[-1])
    nc = max(calls, GRAIN_ELEMENTS_PER_BATCH // sizes[-1])
    for t in (1, threads):
        variants.append(
            Variant(("control", t), lambda: F.gelu(xc), lambda t=t: _num_threads(t), nc)
        )
    with _parallel_grain(1):
        timings = time_interleaved(variants, rounds, calls)
    rows = []
    for size in sizes:
        w1, wn = timings.wall[(size, 1)], timings.wall[(size, threads)]
        m1, mn = statistics.median(w1), statistics.median(wn)
        rows.append(
            {
                "size": size,
                "t1_us": m1 / 1e3,
                "tn_us": mn / 1e3,
                "t1_p5_us": _quantile(w1, 0.05) / 1e3,
                "t1_p95_us": _quantile(w1, 0.95) / 1e3,
                "tn_p5_us": _quantile(wn, 0.05) / 1e3,
                "tn_p95_us": _quantile(wn, 0.95) / 1e3,
                "speedup": m1 / mn,
                # paired: same round, so the same state of the machine
                "tn_faster_rounds": sum(a > b for a, b in zip(w1, wn, strict=True)) / len(w1),
                "calls": max(calls, GRAIN_ELEMENTS_PER_BATCH // size),
            }
        )
    crossover = None
    for r in reversed(rows):
        if not faster(r):
            break
        crossover = r["size"]
    c1 = statistics.median(timings.wall[("control", 1)])
    cn = statistics.median(timings.wall[("control", threads)])
    return rows, crossover, (c1 / 1e3, cn / 1e3, c1 / cn)


def faster(row: dict) -> bool:
    """Whether more threads are faster at this --grain row, beyond the noise."""
    return row["speedup"] >= GRAIN_MIN_SPEEDUP and row["tn_faster_rounds"] >= GRAIN_MIN_WON


def render_grain_table(rows: Sequence[dict], threads: int) -> str:
    lines = [
        f"| size | 1 thread us | {threads} threads us | speedup | {threads} threads faster in |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {_us(r['t1_us'])} | {_us(r['tn_us'])} | {r['speedup']:.2f}"
            f" | {100 * r['tn_faster_rounds']:.0f}% of rounds |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- CLI


def add_arguments(p) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="float32/float16/bfloat16, 30 rounds (the default run adds float64, 60 rounds)",
    )
    p.add_argument(
        "--grain",
        action="store_true",
        help="measure the parallel-grain crossover (1 thread vs all threads over sizes)",
    )
    p.add_argument("--size", type=int, default=1 << 20, help="elements (default 1048576)")
    p.add_argument(
        "--rounds", type=int, default=None, help="rounds (default 30 quick, 60 full, 50 grain)"
    )
    p.add_argument("--calls", type=int, default=20, help="calls per timed batch (default 20)")
    p.add_argument(
        "--dtypes",
        default=None,
        help="comma-separated, e.g. float32,bfloat16 (default: float32,float16,bfloat16"
        " with --quick, also float64 otherwise)",
    )
    p.add_argument("--direction", choices=("forward", "backward", "both"), default="both")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="intra-op threads (default 1; with --grain, the threads compared to 1: all)",
    )
    p.add_argument("--isa", default=None, help="run turbogelu under this ISA (avx512|avx2|scalar)")
    p.add_argument("--out", default=None, help="also append the results as JSON lines here")
    p.add_argument(
        "--malloc",
        choices=("steady", "default"),
        default="steady",
        help="steady (default): glibc keeps freed memory, so output allocation never page-faults"
        "; default: leave glibc's moving thresholds as they are",
    )


def main(args) -> int:
    import torch

    import turbogelu.ops  # noqa: F401

    if args.isa is not None and args.isa not in torch.ops.turbogelu._cpu_isas():
        print(
            f"bench: ISA {args.isa!r} not available here; choose from "
            f"{', '.join(torch.ops.turbogelu._cpu_isas())}",
            file=sys.stderr,
        )
        return 2
    dtypes = (
        tuple(args.dtypes.split(",")) if args.dtypes else DTYPES_QUICK if args.quick else DTYPES_ALL
    )
    bad = [d for d in dtypes if d not in DTYPES_ALL]
    if bad:
        print(f"bench: unsupported dtype(s) {bad}; choose from {DTYPES_ALL}", file=sys.stderr)
        return 2
    directions = ("forward", "backward") if args.direction == "both" else (args.direction,)
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    all_threads = max(2, torch.get_num_threads())
    run_ops_table = args.quick or not args.grain
    malloc = "steady" if args.malloc == "steady" and steady_malloc() else "default"

    with _cpu_isa(args.isa):
        if run_ops_table:
            rounds = args.rounds or (30 if args.quick else 60)
            threads = args.threads or 1
            t0 = time.perf_counter()
            with _num_threads(threads):
                info = machine_info()
                rows = run_ops(directions, dtypes, args.size, rounds, args.calls)
            elapsed = time.perf_counter() - t0
            extra = f"size {args.size}, {rounds} rounds x {args.calls} calls, malloc {malloc}"
            print(_header(info, extra))
            print()
            print(render_table(rows))
            print()
            print(
                "vs turbogelu = method median / turbogelu median (> 1: turbogelu is faster);"
                " / limit = median / median of copy (forward) or mul (backward), same dtype."
            )
            print(_cpu_note(rows))
            print(f"took {elapsed:.1f} s")
            if args.out:
                common = {"bench": "ops", "size": args.size, "threads": threads, "date": date}
                common |= {"malloc": malloc}
                common |= {k: info[k] for k in ("cpu", "isa", "torch")}
                _write_jsonl(args.out, [{**r, "calls": args.calls} for r in rows], common)
        if args.grain:
            if run_ops_table:
                print()
            rounds = args.rounds or 50
            threads = args.threads or all_threads
            t0 = time.perf_counter()
            info = machine_info()
            rows, crossover, control = run_grain(GRAIN_SIZES, threads, rounds, args.calls)
            elapsed = time.perf_counter() - t0
            print(
                _header(
                    info,
                    f"grain: float32 forward, grain 1, {rounds} rounds x"
                    f" max({args.calls}, {GRAIN_ELEMENTS_PER_BATCH} / size) calls, malloc {malloc}",
                )
            )
            print()
            print(render_grain_table(rows, threads))
            print()
            if crossover is None:
                print(f"{threads} threads are not faster at the largest size measured.")
            else:
                print(f"{threads} threads are faster from {crossover} elements on.")
            print(
                f"(faster: median speedup >= {GRAIN_MIN_SPEEDUP} and faster in >="
                f" {100 * GRAIN_MIN_WON:.0f}% of rounds, at that size and every larger one)"
            )
            c1, cn, cs = control
            print(
                f"control, torch F.gelu at {GRAIN_SIZES[-1]} elements: 1 thread {_us(c1)} us,"
                f" {threads} threads {_us(cn)} us, speedup {cs:.2f}"
            )
            if rows[-1]["speedup"] < 1.15 and cs > 1.3:
                print(
                    f"WARNING: torch's own op runs faster on {threads} threads but turbogelu does"
                    " not: is the extension built without OpenMP? (without -fopenmp,"
                    " at::parallel_for runs serially, so the table says nothing about the grain)"
                )
            print(f"took {elapsed:.1f} s")
            if args.out:
                common = {"bench": "grain", "dtype": "float32", "direction": "forward"}
                common |= {"method": "turbogelu", "grain": 1, "date": date, "malloc": malloc}
                common |= {k: info[k] for k in ("cpu", "isa", "torch")}
                long = [
                    {
                        "size": r["size"],
                        "threads": t,
                        "median_us": r[f"{c}_us"],
                        "p5_us": r[f"{c}_p5_us"],
                        "p95_us": r[f"{c}_p95_us"],
                        "calls": r["calls"],
                        "rounds": rounds,
                    }
                    for r in rows
                    for t, c in ((1, "t1"), (threads, "tn"))
                ]
                _write_jsonl(args.out, long, common)
    return 0
