"""A/B of the family's CPU programs: PyTorch eager, the polynomial and the cells program
(family_cells.py) for sigmoid, tanh and softcap (forward), SiLU (forward and backward) and
SwiGLU's forward, at 1M elements, one thread, medians of interleaved rounds (us per call).

    PYTHONPATH=. python experiments/family_cells_ab.py [--rounds 15] [--calls 20] [--isa avx2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import turbogelu
from turbogelu import ops as tops

OPS = torch.ops.turbogelu


def _cases(dtype, n):
    x = torch.randn(n, dtype=dtype) * 4
    b = torch.randn(n, dtype=dtype)
    g = torch.randn(n, dtype=dtype)
    silu_grad = torch.ops.aten.silu_backward
    return {
        ("sigmoid", "forward"): (lambda: torch.sigmoid(x), lambda: OPS.sigmoid(x)),
        ("tanh", "forward"): (lambda: torch.tanh(x), lambda: OPS.tanh(x)),
        ("softcap", "forward"): (lambda: 30 * torch.tanh(x / 30), lambda: OPS.softcap(x, 30.0)),
        ("silu", "forward"): (lambda: F.silu(x), lambda: OPS.silu(x)),
        ("silu", "backward"): (lambda: silu_grad(g, x), lambda: OPS.silu_backward(g, x)),
        ("swiglu", "forward"): (lambda: F.silu(x) * b, lambda: OPS.swiglu(x, b)),
    }


def _time(f, calls):
    t = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t) / calls * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--isa", default=None, help="a CPU instruction set (default: the best)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.isa:
        with tops.use_cpu_isa(args.isa):
            return _run(args)
    return _run(args)


def _run(args):
    print(
        f"turbogelu {turbogelu.__version__}, ISA {tops.cpu_isa()}, {args.size} elements, "
        f"1 thread, median of {args.rounds} interleaved rounds x {args.calls} calls (us)"
    )
    print(
        "| function | direction | dtype | PyTorch | poly | cells | PyTorch/poly | PyTorch/cells |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for (fn, direction), (ref, ours) in _cases(dtype, args.size).items():
            rows = {"PyTorch": [], "poly": [], "cells": []}
            for _ in range(args.rounds):
                rows["PyTorch"].append(_time(ref, args.calls))
                for prog in ("poly", "cells"):
                    with tops.use_cpu_kernel(prog):
                        rows[prog].append(_time(ours, args.calls))
            m = {k: statistics.median(v) for k, v in rows.items()}
            print(
                f"| {fn} | {direction} | {str(dtype)[6:]} | {m['PyTorch']:.0f} | {m['poly']:.0f}"
                f" | {m['cells']:.0f} | {m['PyTorch'] / m['poly']:.2f}x"
                f" | {m['PyTorch'] / m['cells']:.2f}x |"
            )


if __name__ == "__main__":
    main()
