"""Does a baseline row's time depend on where its buffers sit, or on denormal handling?

Times one PyTorch op at 1M (+15 edge values) elements, one thread, into an ``out=`` buffer
placed at chosen offsets within a page from its inputs (4K aliasing between the stores to
``out`` and the loads of ``x`` / ``g``), and with flush-to-zero / denormals-are-zero on and
off. Configurations are interleaved per round (seeded shuffle); reported: the median of this
thread's CPU time per call (wall time on a shared machine mostly measures the neighbours).

    python experiments/archive/baseline_alone/placement.py --op gelu_backward --dtype bfloat16

The benchmark's own check (each baseline row timed alone in a fresh process):

    python -m experiments bench --parts protocol --direction backward --dtypes bfloat16 --out -
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch

from experiments import bench

OPS = {
    "gelu_backward": lambda g, x, out: torch.ops.aten.gelu_backward.grad_input(
        g, x, grad_input=out
    ),
    "gelu": lambda g, x, out: torch.ops.aten.gelu.out(x, out=out),
    "mul": lambda g, x, out: torch.mul(g, x, out=out),
    "copy": lambda g, x, out: out.copy_(x),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", choices=sorted(OPS), default="gelu_backward")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=10)
    args = p.parse_args()
    torch.set_num_threads(1)
    x0, g0 = bench.make_inputs(args.dtype, 1 << 20, edges=True)
    n, es = x0.numel(), x0.element_size()
    page = 4096 // es
    span = ((n + page - 1) // page + 4) * page  # each buffer in its own stretch of pages
    big = torch.empty(3 * span + page, dtype=x0.dtype)
    start = (page - (big.data_ptr() % 4096) // es) % page  # the first page boundary
    # (x, g, out) offsets in elements from a page boundary, and FTZ/DAZ
    offsets = [(0, 0, 0), (0, 0, 32), (0, 32, 0), (0, page // 2, page // 4), (32, 0, 0)]
    offsets += [(0, 0, page - 32), (0, page - 32, 0)]
    configs = [(o, False) for o in offsets] + [((0, page // 2, page // 4), True)]
    fn = OPS[args.op]

    def bufs(o):
        x = big[start + o[0] : start + o[0] + n]
        g = big[start + span + o[1] : start + span + o[1] + n]
        out = big[start + 2 * span + o[2] : start + 2 * span + o[2] + n]
        return x, g, out

    times = {c: [] for c in configs}
    order = list(configs)
    rng = random.Random(0)
    for _ in range(args.rounds):
        rng.shuffle(order)
        for o, ftz in order:
            x, g, out = bufs(o)
            x.copy_(x0)  # the views of different configurations overlap: refill
            g.copy_(g0)
            torch.set_flush_denormal(ftz)
            fn(g, x, out)
            t0 = time.thread_time_ns()
            for _ in range(args.calls):
                fn(g, x, out)
            times[(o, ftz)].append((time.thread_time_ns() - t0) / args.calls / 1e3)
    torch.set_flush_denormal(False)
    print(f"{args.op} {args.dtype}, {n} elements, 1 thread; offsets in elements (page: {page})")
    for (o, ftz), ts in times.items():
        print(
            f"x+{o[0]:<5d} g+{o[1]:<5d} out+{o[2]:<5d} FTZ/DAZ {'on ' if ftz else 'off'}:"
            f" median {statistics.median(ts):8.1f} us CPU per call (min {min(ts):.1f})"
        )


if __name__ == "__main__":
    main()
