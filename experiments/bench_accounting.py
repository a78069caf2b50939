"""Where the 16-bit forward's time goes (issue 41, item 1): one call of the protocol's row taken
apart, layer by layer, each layer a row timed beside the others.

The protocol's ``turbogelu`` row (``experiments.bench``: ``torch.ops.turbogelu.gelu(x)``, one
thread, 1,048,576 + 15 elements) is the kernel plus what surrounds it. The rows, from the
bottom up (forward, the CPU's default program unless ``--program``):

* ``limit: stream copy`` / ``limit: copy``: the same bytes moved into a preallocated output
  (the protocol's limit rows; the faster is the limit);
* ``out=, plain stores`` / ``out=, streaming stores``: the op's kernel alone, into the same
  preallocated output, each store forced (``_set_cpu_store``);
* ``out=, auto stores``: the kernel with the store the library picks for this size;
* ``allocating, below autograd``: plus the output's allocation and the op's schema (the
  dispatcher below the Autograd key);
* ``op (the protocol's row)``: plus the op's Autograd kernel (C++ for CPU tensors since issue
  41: it checks whether the call is differentiated; it was Python before);
* ``turbogelu.gelu``: plus the public function's argument checks;
* ``torch exact``: PyTorch's ``F.gelu`` for scale;
* float16 on a CPU with AVX512-FP16 only: ``half program, out= (probe)`` and ``half program,
  allocating (probe)``, the half-precision program of ``turbogelu.approx.half16`` in the
  library's loop shape with streaming stores (``turbogelu_bench._gelu_half16``), which the
  kernels do not run yet: what the float16 rows would take with it.

Each process times every row interleaved (``bench_timing.time_interleaved``, glibc's
thresholds fixed by ``steady_malloc`` as in the benchmark), and the run repeats in
``--processes`` fresh processes, because on a shared machine a process's layout (where its
output lands against its input) and its neighbours move every row of it together: the ratios
to the process's own fastest copy are what compare. Per-call overheads are timed at 16
elements in the same way.

    python -m experiments.bench_accounting                 # bfloat16 and float16, 3 processes
    python -m experiments.bench_accounting --out results/bench_accounting.json

torch is imported inside functions only.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # where `python -m experiments...` runs
ROWS = (
    "limit: stream copy",
    "limit: copy",
    "out=, plain stores",
    "out=, streaming stores",
    "out=, auto stores",
    "allocating, below autograd",
    "op (the protocol's row)",
    "turbogelu.gelu",
    "torch exact",
)
HALF_ROWS = ("half program, out= (probe)", "half program, allocating (probe)")
LIMITS = ROWS[:2]
OVERHEAD_SIZE = 16  # elements: a call's fixed cost
DTYPES = ("bfloat16", "float16")


def _variants(dtype: str, size: int, program: str | None) -> list:
    import torch
    import torch.nn.functional as F

    import turbogelu
    from turbogelu import ops

    from . import bench_variants, probes
    from .bench_timing import Variant

    tg, tb, sw = torch.ops.turbogelu, probes.OPS, ops._ops
    if size >= 1 << 20:
        x, _ = bench_variants.make_inputs(dtype, size, edges=True)
    else:
        x = torch.randn(size).mul(3).to(getattr(torch, dtype))
    out = torch.empty_like(x)

    @contextlib.contextmanager
    def switched(store: str):
        prev = sw._set_cpu_store(store), sw._set_cpu_kernel(program or "auto")
        try:
            yield
        finally:
            sw._set_cpu_store(prev[0])
            sw._set_cpu_kernel(prev[1])

    def below():
        with torch._C._AutoDispatchBelowAutograd():
            return tg.gelu(x)

    fns = {
        "limit: stream copy": (None, lambda: tb._stream_copy.out(x, out=out)),
        "limit: copy": (None, lambda: out.copy_(x)),
        "out=, plain stores": ("plain", lambda: tg.gelu.out(x, out=out)),
        "out=, streaming stores": ("stream", lambda: tg.gelu.out(x, out=out)),
        "out=, auto stores": ("auto", lambda: tg.gelu.out(x, out=out)),
        "allocating, below autograd": ("auto", below),
        "op (the protocol's row)": ("auto", lambda: tg.gelu(x)),
        "turbogelu.gelu": ("auto", lambda: turbogelu.gelu(x)),
        "torch exact": (None, lambda: F.gelu(x)),
    }
    assert tuple(fns) == ROWS
    if dtype == "float16" and tb._half16_available():
        half = probes.half16_program()
        fns[HALF_ROWS[0]] = (None, lambda: tb._gelu_half16.out(x, half, True, out=out))
        fns[HALF_ROWS[1]] = (None, lambda: tb._gelu_half16(x, half, True))
    return [
        Variant(row, fn, functools.partial(switched, store) if store else contextlib.nullcontext)
        for row, (store, fn) in fns.items()
    ]


def _offset(dtype: str, size: int) -> int:
    """Where an allocated output lands against its input, in bytes mod 4096 (a load and a
    store 4 KiB apart compete in the store buffer's address check)."""
    import torch

    x = torch.zeros(size, dtype=getattr(torch, dtype))
    y = torch.ops.turbogelu.gelu(x)
    return (y.data_ptr() - x.data_ptr()) % 4096


def child(dtypes, size: int, rounds: int, calls: int, program: str | None) -> dict:
    """One process's timings: {dtype: {row: median us}}, the overheads at 16 elements."""
    import torch

    from . import bench_timing

    torch.set_num_threads(1)
    steady = bench_timing.steady_malloc()
    result: dict = {"steady_malloc": steady, "rows": {}, "overhead_us": {}, "offset": {}}
    for dtype in dtypes:
        parts = ((size, "rows", rounds, calls), (OVERHEAD_SIZE, "overhead_us", 15, 2000))
        for n, key, r, c in parts:
            vs = _variants(dtype, n, program)
            t = bench_timing.time_interleaved(vs, r, c)
            result[key][dtype] = {v.key: statistics.median(t.wall[v.key]) / 1e3 for v in vs}
        result["offset"][dtype] = _offset(dtype, size)
    from . import bench_variants

    result["program"] = program or bench_variants.cpu_program()
    result["isa"] = str(torch.ops.turbogelu._cpu_isa())
    return result


def run(
    dtypes=DTYPES,
    size: int = 1 << 20,
    rounds: int = 21,
    calls: int = 50,
    processes: int = 3,
    program: str | None = None,
) -> dict:
    """``processes`` fresh processes of ``child``; per row and dtype the median over processes
    of its time and of its ratio to the process's fastest limit row, and their ranges."""
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    runs = []
    for _ in range(processes):
        cmd = [
            sys.executable,
            "-m",
            "experiments.bench_accounting",
            "--child",
            "--dtypes",
            ",".join(dtypes),
            "--size",
            str(size),
            "--rounds",
            str(rounds),
            "--calls",
            str(calls),
        ] + (["--program", program] if program else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
        if proc.returncode != 0:
            raise RuntimeError(f"a timing process failed:\n{proc.stderr[-2000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    table = {}
    for dtype in dtypes:
        rows = {}
        for row in (row for row in ROWS + HALF_ROWS if row in runs[0]["rows"][dtype]):
            us = [r["rows"][dtype][row] for r in runs]
            ratio = [r["rows"][dtype][row] / min(r["rows"][dtype][m] for m in LIMITS) for r in runs]
            rows[row] = {
                "us": statistics.median(us),
                "us_range": [min(us), max(us)],
                "x_limit": statistics.median(ratio),
                "x_limit_range": [min(ratio), max(ratio)],
                "overhead_us": statistics.median(r["overhead_us"][dtype][row] for r in runs),
            }
        table[dtype] = {"rows": rows, "offsets": [r["offset"][dtype] for r in runs]}
    return {
        "size": size,
        "rounds": rounds,
        "calls": calls,
        "processes": processes,
        "program": runs[0]["program"],
        "isa": runs[0]["isa"],
        "dtypes": table,
    }


def render(result: dict) -> str:
    """The markdown table: per row and dtype, time and ratio to the fastest limit row."""
    dtypes = list(result["dtypes"])
    head = "| row | " + " | ".join(f"{d}: us (x limit) | {d}: 16-element call, us" for d in dtypes)
    lines = [head + " |", "|---|" + "---:|---:|" * len(dtypes)]
    present = {row for d in dtypes for row in result["dtypes"][d]["rows"]}
    for row in (row for row in ROWS + HALF_ROWS if row in present):
        cells = []
        for d in dtypes:
            r = result["dtypes"][d]["rows"].get(row)
            if r is None:  # a probe row this dtype has not
                cells += ["", ""]
                continue
            lo, hi = r["x_limit_range"]
            cells.append(f"{r['us']:.1f} ({r['x_limit']:.2f}x, {lo:.2f}-{hi:.2f})")
            cells.append(f"{r['overhead_us']:.2f}")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    n = result["processes"]
    title = (
        f"{result['program']} on {result['isa']}, {result['size']} elements, one thread, "
        f"medians of {n} processes x {result['rounds']} interleaved rounds x "
        f"{result['calls']} calls (ranges over the processes)"
    )
    return title + "\n\n" + "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m experiments.bench_accounting", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--program", choices=("poly", "cells"), default=None)
    p.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    dtypes = tuple(a.dtypes.split(","))
    if a.child:
        print(json.dumps(child(dtypes, a.size, a.rounds, a.calls, a.program)))
        return 0
    result = run(dtypes, a.size, a.rounds, a.calls, a.processes, a.program)
    print(render(result))
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
