"""The 16-bit programs sized for their format, timed against the float32 tables (issue 41).

For each function with a cells program (GELU's two forms, sigmoid, tanh, SiLU) and each 16-bit
dtype, the forward kernel alone (``.out`` into a preallocated output, the stores the library
picks, one thread), timed interleaved with ``bench_timing.time_interleaved`` in one process:

* ``sized``: the cells program as the library runs it in that dtype (the format's own tables
  where ``turbogelu/approx/cells16.py`` found a lower degree, else the float32 ones);
* ``float32 tables``: the same call with the benchmark's switch
  ``turbogelu_bench._set_sized_cells(False)``, the cubic per cell of float32;
* ``torch``: PyTorch's own function into the same output (``aten::<fn>.out``);
* the fastest of a streaming copy and ``copy_`` of the same bytes: the limit.

The degrees are what ``turbogelu.cpu_program()`` reports for each; where a dtype keeps the
float32 tables the two rows time the same program (their ratio shows the noise).

    python -m experiments.bench_sized [--size N] [--rounds R] [--calls C]

torch is imported inside functions only.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics

# The rows of the kernels' table with cells programs, and how each is called.
FUNCTIONS = ("gelu_none", "gelu_tanh", "sigmoid", "tanh", "silu")
DTYPES = ("bfloat16", "float16")
PROGRAMS = ("sized", "float32 tables", "torch")
LIMITS = ("limit: stream copy", "limit: copy")


def _calls(fn: str, x, out) -> dict:
    """{program: a call writing fn(x) into out}."""
    import torch

    tg, aten = torch.ops.turbogelu, torch.ops.aten
    if fn.startswith("gelu_"):
        mode = fn.removeprefix("gelu_")
        ours = lambda: tg.gelu.out(x, mode, out=out)  # noqa: E731
        theirs = lambda: aten.gelu.out(x, approximate=mode, out=out)  # noqa: E731
    else:
        ours = lambda: getattr(tg, fn).out(x, out=out)  # noqa: E731
        theirs = lambda: getattr(aten, fn).out(x, out=out)  # noqa: E731
    return {"sized": ours, "float32 tables": ours, "torch": theirs}


@contextlib.contextmanager
def _program(program: str):
    """The cells program forced, with the 16-bit tables on or off, for the block."""
    from turbogelu import ops

    from . import probes

    kernel = ops._ops._set_cpu_kernel("cells")
    sized = probes.OPS._set_sized_cells(program != "float32 tables")
    try:
        yield
    finally:
        probes.OPS._set_sized_cells(sized)
        ops._ops._set_cpu_kernel(kernel)


def degrees(dtype: str) -> dict:
    """{function: (degree with the format's tables, degree with float32's)} of the forward, as
    cpu_program() reports them under the cells program."""
    import turbogelu

    out = {}
    for program in ("sized", "float32 tables"):
        with _program(program):
            d = turbogelu.cpu_program()["degrees"]
        for fn in FUNCTIONS:
            out.setdefault(fn, []).append(d[fn][dtype]["forward"])
    return {fn: tuple(v) for fn, v in out.items()}


def _time(dtype: str, size: int, rounds: int, calls: int) -> dict:
    """{variant key: median us} of one dtype's rows, interleaved."""
    import torch

    from . import bench_timing, bench_variants, probes
    from .bench_timing import Variant

    x, _ = bench_variants.make_inputs(dtype, size, edges=True)
    out = torch.empty_like(x)
    variants = [
        Variant(LIMITS[0], lambda: probes.OPS._stream_copy.out(x, out=out)),
        Variant(LIMITS[1], lambda: out.copy_(x)),
    ]
    for fn in FUNCTIONS:
        for program, call in _calls(fn, x, out).items():
            context = contextlib.nullcontext
            if program != "torch":
                context = functools.partial(_program, program)
            variants.append(Variant((fn, program), call, context))
    timed = bench_timing.time_interleaved(variants, rounds, calls)
    return {v.key: statistics.median(timed.wall[v.key]) / 1e3 for v in variants}


def run(dtypes=DTYPES, size: int = 1 << 20, rounds: int = 15, calls: int = 20) -> list[dict]:
    """One row per (function, dtype): the medians (us) of each program, the fastest limit,
    and the degrees."""
    import torch

    from . import bench_timing

    if size < 1 or rounds < 1 or calls < 1:
        raise ValueError(f"size, rounds and calls must be >= 1, got {size}, {rounds}, {calls}")
    torch.set_num_threads(1)
    bench_timing.steady_malloc()
    rows = []
    for dtype in dtypes:
        us = _time(dtype, size, rounds, calls)
        limit = min(us[k] for k in LIMITS)
        deg = degrees(dtype)
        for fn in FUNCTIONS:
            rows.append(
                {
                    "function": fn,
                    "dtype": dtype,
                    "size": size,
                    "degree": deg[fn][0],
                    "float32_degree": deg[fn][1],
                    "limit_us": limit,
                    **{f"{p.replace(' ', '_')}_us": us[(fn, p)] for p in PROGRAMS},
                }
            )
    return rows


def render(rows: list[dict]) -> str:
    """The markdown table: per function and dtype, the degrees and the times as ratios."""
    lines = [
        "| function | dtype | degree (float32's) | sized / float32 tables | sized / limit "
        "| float32 tables / limit | torch / sized |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        s, f, lim = r["sized_us"], r["float32_tables_us"], r["limit_us"]
        lines.append(
            f"| {r['function']} | {r['dtype']} | {r['degree']} ({r['float32_degree']}) "
            f"| {s / f:.2f} | {s / lim:.2f} | {f / lim:.2f} | {r['torch_us'] / s:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)
    print(render(run(size=args.size, rounds=args.rounds, calls=args.calls)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
