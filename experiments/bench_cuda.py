"""GPU benchmark: ``python -m experiments.bench_cuda`` (one size, 1M elements by default) and
``python -m experiments.bench_cuda --sweep`` (sizes up to 256M elements).

Method, as bench.py's for the CPU (variants interleaved in one process, a seeded shuffle per
round, medians with p5/p95 over rounds), with GPU timing: each batch of ``calls`` calls is
bracketed by CUDA events on the current stream and synchronized before the next variant
starts, so what is timed is execution, not enqueueing, and variants never overlap. Each call
allocates its output (PyTorch's caching allocator: no cudaMalloc after the warm-up).

The limit rows are what moving the same bytes costs on this GPU: a device-to-device copy
(``empty_like(x).copy_(x)``: one read, one write) for the forward and ``torch.mul(g, x)`` (two
reads, one write) for the backward; GB/s = bytes moved / median time. At sizes far beyond
the L2 cache (64M elements and up) the limit is the HBM bandwidth, so ``/ limit`` says how far
from the roofline a kernel is. It shares no code with bench.py, the general benchmark, but the
harness's records (``experiments.records``: quantiles, the JSON-lines writer; no torch), so
that tests/gpu_check.sh depends on nothing else.

Beside the op: "turbogelu (misaligned)", the input at a one-element offset (``x[1:]``; for the
backward the saved input of a view, with grad and the output aligned), which the kernels
peel to a 16-byte boundary; "turbogelu (wrapper)", the Python function ``turbogelu.gelu`` (its
argument checks and autograd dispatch over the op).

``--judge`` turns the issue's bars into the exit status (3 when one fails, for
tests/gpu_check.sh): at ``--op-size`` (1M) the forward op ``torch.ops.turbogelu.gelu`` within
1.05x ``F.gelu`` per dtype (the wrapper's time reported beside it, not judged); at
``--roofline-size`` (256M) the op, forward and backward, per dtype, within 10% of the copy /
mul limit. Every other verdict line is reported only.

``--device cpu`` runs the same pipeline on CPU tensors with the CPU clock: not a measurement,
a dry run of the code and its outputs where there is no GPU (tests/gpu_check.sh --dry-run).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from .records import quantile, write_jsonl

DTYPES = ("float32", "float16", "bfloat16")
METHODS = {
    "forward": ("turbogelu", "turbogelu (Estrin)", "turbogelu (packed)", "turbogelu (misaligned)",
                "turbogelu (wrapper)", "torch exact", "torch tanh", "copy"),
    "backward": ("turbogelu", "turbogelu (Estrin)", "turbogelu (packed)",
                 "turbogelu (misaligned)", "torch exact", "torch tanh", "mul"),
}  # fmt: skip
PACKED_DTYPES = ("bfloat16",)  # the opt-in packed path exists for these only
LIMIT = {"forward": "copy", "backward": "mul"}
TENSORS_MOVED = {"forward": 2, "backward": 3}  # reads + writes of n elements
SWEEP_SIZES = (1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28)
ROOFLINE_FROM = 1 << 26  # sizes where the HBM roofline is reported
ROOFLINE_SLACK = 1.10  # judged: the op within 10% of the copy / mul limit at --roofline-size
OP_SLACK = 1.05  # judged: the forward op within 1.05x F.gelu at --op-size
OP_SIZE = 1 << 20
ROOFLINE_SIZE = 1 << 28
# Sweep: calls per batch so that a batch moves about this many elements (at least 3 calls).
SWEEP_ELEMENTS_PER_BATCH = 1 << 27


def device_info(device: str = "cuda") -> dict:
    import torch

    import turbogelu.ops  # noqa: F401  (loads the extension)

    if device == "cpu":
        import os

        return {
            "gpu": "none: CPU tensors, CPU clock (a dry run, not a measurement)",
            "capability": "-",
            "sms": os.cpu_count(),
            "memory_gib": 0.0,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
        }
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "gpu": p.name,
        "capability": f"{p.major}.{p.minor}",
        "sms": p.multi_processor_count,
        "memory_gib": round(p.total_memory / 2**30, 1),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }


def _inputs(dtype: str, size: int, seed: int = 0, device: str = "cuda"):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    dt = getattr(torch, dtype)
    x = (torch.randn(size, device=device, generator=g) * 3).to(dt)
    grad = torch.randn(size, device=device, generator=g).to(dt)
    return x, grad


def make_variants(
    direction: str, dtype: str, size: int, device: str = "cuda"
) -> dict[tuple, Callable[[], object]]:
    """{(direction, dtype, size, method): fn} for one group."""
    import torch
    import torch.nn.functional as F

    import turbogelu

    x, g = _inputs(dtype, size, device=device)
    # The input one element into its storage: 2 or 4 bytes off every 16-byte boundary; the
    # gradient and the output stay aligned, as for a view's saved input under autograd.
    xm, gm = x[1:], g[: size - 1]
    tg = torch.ops.turbogelu
    aten = torch.ops.aten
    if direction == "forward":
        fns = {
            "turbogelu": lambda: tg.gelu(x),
            "turbogelu (Estrin)": lambda: tg.gelu(x),
            "turbogelu (packed)": lambda: tg.gelu(x),
            "turbogelu (misaligned)": lambda: tg.gelu(xm),
            "turbogelu (wrapper)": lambda: turbogelu.gelu(x),
            "torch exact": lambda: F.gelu(x),
            "torch tanh": lambda: F.gelu(x, approximate="tanh"),
            "copy": lambda: torch.empty_like(x).copy_(x),
        }
    else:
        fns = {
            "turbogelu": lambda: tg.gelu_backward(g, x),
            "turbogelu (Estrin)": lambda: tg.gelu_backward(g, x),
            "turbogelu (packed)": lambda: tg.gelu_backward(g, x),
            "turbogelu (misaligned)": lambda: tg.gelu_backward(gm, xm),
            "torch exact": lambda: aten.gelu_backward(g, x),
            "torch tanh": lambda: aten.gelu_backward(g, x, approximate="tanh"),
            "mul": lambda: torch.mul(g, x),
        }
    assert tuple(fns) == METHODS[direction]
    if dtype not in PACKED_DTYPES:
        del fns["turbogelu (packed)"]
    return {(direction, dtype, size, m): fn for m, fn in fns.items()}


def _scheme_for(key: tuple) -> str:
    return "estrin" if key[3].endswith("(Estrin)") else "horner"


@contextlib.contextmanager
def _setting(key: tuple):
    """The polynomial scheme and the packed switch a variant runs with (set outside the timed
    region)."""
    import torch

    from .probes import OPS as BENCH_OPS

    tg = torch.ops.turbogelu
    scheme = BENCH_OPS._set_poly_scheme(_scheme_for(key))
    packed = tg._set_cuda_packed(key[3].endswith("(packed)"))
    try:
        yield
    finally:
        BENCH_OPS._set_poly_scheme(scheme)
        tg._set_cuda_packed(packed)


class _CpuEvent:
    """torch.cuda.Event's interface on the CPU clock, for --device cpu (synchronous ops)."""

    def __init__(self, enable_timing: bool = False):
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _CpuEvent) -> float:  # milliseconds, as CUDA's
        return (end.t - self.t) * 1e3


def time_cuda(
    variants: dict[tuple, Callable[[], object]],
    rounds: int,
    calls: int,
    *,
    warmup: int = 3,
    seed: int = 0,
    device: str = "cuda",
) -> dict[tuple, list[float]]:
    """Per-call microseconds, one entry per round, for every variant (interleaved)."""
    import torch

    gpu = device == "cuda"
    event = torch.cuda.Event if gpu else _CpuEvent
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    times: dict[tuple, list[float]] = {k: [] for k in variants}
    start, end = event(enable_timing=True), event(enable_timing=True)
    for key, fn in variants.items():
        with _setting(key):
            for _ in range(max(warmup, 1)):
                fn()
    sync()
    order = list(variants)
    rng = random.Random(seed)
    for _ in range(rounds):
        rng.shuffle(order)
        for key in order:
            fn = variants[key]
            with _setting(key):
                start.record()
                for _ in range(calls):
                    fn()
                end.record()
                end.synchronize()
            times[key].append(start.elapsed_time(end) * 1e3 / calls)
    return times


def summarize(times: dict[tuple, list[float]], calls: int) -> list[dict]:
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = []
    for key, w in times.items():
        direction, dtype, size, method = key
        m = med[key]
        tg = med.get((direction, dtype, size, "turbogelu"))
        limit = med.get((direction, dtype, size, LIMIT[direction]))
        es = 4 if dtype == "float32" else 2
        nbytes = TENSORS_MOVED[direction] * size * es
        rows.append(
            {
                "direction": direction,
                "dtype": dtype,
                "size": size,
                "method": method,
                "median_us": m,
                "p5_us": quantile(w, 0.05),
                "p95_us": quantile(w, 0.95),
                "gb_per_s": nbytes / (m * 1e-6) / 1e9,
                "vs_turbogelu": m / tg if tg else None,
                "per_limit": m / limit if limit else None,
                "rounds": len(w),
                "calls": calls,
            }
        )
    return rows


def run(
    sizes: Sequence[int],
    dtypes: Sequence[str],
    directions: Sequence[str],
    rounds: int,
    calls: int | None,
    device: str = "cuda",
) -> list[dict]:
    """One interleaved group per (size, direction, dtype), so that at most one group's tensors
    are alive (256M float32 elements are 1 GiB a tensor)."""
    import torch

    rows = []
    for size in sizes:
        n = calls or max(3, min(100, SWEEP_ELEMENTS_PER_BATCH // size))
        for direction in directions:
            for dtype in dtypes:
                variants = make_variants(direction, dtype, size, device)
                rows += summarize(time_cuda(variants, rounds, n, device=device), n)
                del variants
                if device == "cuda":
                    torch.cuda.empty_cache()
    return rows


def _us(t: float) -> str:
    return f"{t:.0f}" if t >= 1000 else f"{t:.1f}" if t >= 10 else f"{t:.2f}"


def _ratio(r: float | None) -> str:
    return "" if r is None else f"{r:.2f}"


def render_table(rows: Sequence[dict]) -> str:
    lines = [
        "| direction | dtype | size | method | median us | p5 | p95 | GB/s | vs turbogelu"
        " | / limit |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['direction']} | {r['dtype']} | {r['size']} | {r['method']}"
            f" | {_us(r['median_us'])} | {_us(r['p5_us'])} | {_us(r['p95_us'])}"
            f" | {r['gb_per_s']:.0f} | {_ratio(r['vs_turbogelu'])} | {_ratio(r['per_limit'])} |"
        )
    return "\n".join(lines)


def verdicts(
    rows: Sequence[dict], op_size: int = OP_SIZE, roofline_size: int = ROOFLINE_SIZE
) -> list[tuple[bool | None, str]]:
    """[(passed, line)]: passed is True / False for a judged bar (see the module's doc), None
    for a line reported only. Per (direction, dtype, size) of the turbogelu rows: the time
    against F.gelu (exact) and, from ROOFLINE_FROM, against the copy / mul limit."""
    out: list[tuple[bool | None, str]] = []
    by_key = {(r["direction"], r["dtype"], r["size"], r["method"]): r for r in rows}
    for (d, t, s, m), r in by_key.items():
        if not m.startswith("turbogelu"):
            continue
        exact = by_key.get((d, t, s, "torch exact"))
        ratio = r["median_us"] / exact["median_us"] if exact else None
        head = f"{d:8s} {t:8s} {s:>10d}: {m} {_us(r['median_us'])} us"
        if ratio is not None:
            judged = m == "turbogelu" and d == "forward" and s == op_size
            ok = ratio <= OP_SLACK
            line = f"{head}, {ratio:.3f} x F.gelu ({_us(exact['median_us'])} us)"
            if judged:
                wrapper = by_key.get((d, t, s, "turbogelu (wrapper)"))
                extra = ""
                if wrapper:
                    extra = (
                        f"; the wrapper turbogelu.gelu: {_us(wrapper['median_us'])} us,"
                        f" {wrapper['median_us'] / exact['median_us']:.3f} x (reported)"
                    )
                out.append(
                    (ok, f"{line}: {'within' if ok else 'NOT within'} {OP_SLACK:.2f}x{extra}")
                )
            elif m != "turbogelu (wrapper)":
                out.append((None, line))
        if (s >= ROOFLINE_FROM or s == roofline_size) and r["per_limit"] is not None:
            ok = r["per_limit"] <= ROOFLINE_SLACK
            judged = m == "turbogelu" and s == roofline_size
            line = (
                f"{head}, {r['per_limit']:.3f} x {LIMIT[d]} ({r['gb_per_s']:.0f} GB/s):"
                f" {'within' if ok else 'NOT within'} {100 * (ROOFLINE_SLACK - 1):.0f}% of the"
                " roofline"
            )
            out.append((ok if judged else None, line))
    return out


def render_verdicts(judged: Sequence[tuple[bool | None, str]]) -> list[str]:
    """PASS / FAIL for the judged bars (tests/gpu_check.sh collects these lines), then the
    rest."""
    tag = {True: "PASS", False: "FAIL"}
    first = [f"{tag[ok]}: {line}" for ok, line in judged if ok is not None]
    return first + [f"reported: {line}" for ok, line in judged if ok is None]


def report(rows: Sequence[dict], info: dict, extra: str, elapsed: float, judged=()) -> str:
    head = (
        f"GPU: {info['gpu']} (sm_{info['capability'].replace('.', '')}, {info['sms']} SMs,"
        f" {info['memory_gib']} GiB) | torch {info['torch']} (CUDA {info['cuda']}) | {extra}"
    )
    notes = (
        "Timing: CUDA events around each batch, synchronized; variants interleaved (seeded"
        " shuffle per round). vs turbogelu = median / turbogelu median (> 1: turbogelu is"
        " faster); / limit = median / median of copy (forward) or mul (backward); GB/s = bytes"
        " read + written / median. misaligned: the input at a one-element offset; wrapper:"
        " turbogelu.gelu (Python) over the op."
    )
    return "\n".join(
        [
            head,
            "",
            render_table(rows),
            "",
            notes,
            "",
            *render_verdicts(judged),
            f"took {elapsed:.1f} s",
        ]
    )


def execute(
    sizes: Sequence[int],
    dtypes: Sequence[str],
    directions: Sequence[str],
    rounds: int,
    calls: int | None,
    out: str | None,
    label: str,
    *,
    device: str = "cuda",
    judge: bool = False,
    op_size: int = OP_SIZE,
    roofline_size: int = ROOFLINE_SIZE,
) -> int:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        print("bench_cuda: needs a CUDA device (torch.cuda.is_available() is False)")
        return 2
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        print(f"bench_cuda: unsupported dtype(s) {bad}; choose from {DTYPES}", file=sys.stderr)
        return 2
    info = device_info(device)
    t0 = time.perf_counter()
    rows = run(sizes, dtypes, directions, rounds, calls, device)
    elapsed = time.perf_counter() - t0
    calls_txt = f"{calls} calls" if calls else f"max(3, min(100, {SWEEP_ELEMENTS_PER_BATCH}/size))"
    judged = verdicts(rows, op_size, roofline_size)
    print(report(rows, info, f"{label}: {rounds} rounds x {calls_txt}", elapsed, judged))
    if out:
        date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        common = {"bench": f"cuda-{label}", "date": date, "device": device, **info}
        write_jsonl(out, rows, common)
    if judge and any(ok is False for ok, _ in judged):
        return 3
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.bench_cuda", description=__doc__)
    p.add_argument("--sweep", action="store_true", help="sizes 64K ... 256M (default: --size)")
    p.add_argument("--size", type=int, default=1 << 20, help="elements without --sweep (1M)")
    p.add_argument("--sizes", default=None, help="comma-separated sizes (overrides --sweep)")
    p.add_argument("--rounds", type=int, default=None, help="rounds (30; 15 with --sweep)")
    p.add_argument("--calls", type=int, default=None, help="calls per batch (see --sweep)")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--direction", choices=("forward", "backward", "both"), default="both")
    p.add_argument("--out", default=None, help="append the rows as JSON lines here")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: a dry run on CPU tensors (not a measurement)")  # fmt: skip
    p.add_argument("--judge", action="store_true", help="exit 3 when a judged bar fails")
    p.add_argument("--op-size", type=int, default=OP_SIZE,
                   help="size of the judged op vs F.gelu bar (1M)")  # fmt: skip
    p.add_argument("--roofline-size", type=int, default=ROOFLINE_SIZE,
                   help="size of the judged roofline bar (256M)")  # fmt: skip
    args = p.parse_args(argv)
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    else:
        sizes = list(SWEEP_SIZES) if args.sweep else [args.size]
    sweep = args.sweep or bool(args.sizes)
    rounds = args.rounds or (15 if sweep else 30)
    calls = args.calls if args.calls or sweep else 20
    directions = ("forward", "backward") if args.direction == "both" else (args.direction,)
    label = "sweep" if sweep else "ops"
    return execute(
        sizes,
        args.dtypes.split(","),
        directions,
        rounds,
        calls,
        args.out,
        label,
        device=args.device,
        judge=args.judge,
        op_size=args.op_size,
        roofline_size=args.roofline_size,
    )


if __name__ == "__main__":
    sys.exit(main())
