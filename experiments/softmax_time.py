"""turbogelu.softmax against torch.softmax on the CPU, one thread: rows of the last dim of a
(32, 256, 256) tensor, float32 and bfloat16, interleaved rounds, medians per call (issue 18:
never slower than torch.softmax, faster in bfloat16).

    PYTHONPATH=$PWD python -m experiments.softmax_time [--rounds 31] [--calls 5]
        [--shape 32,256,256] [--dim -1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import turbogelu

SHAPE = (32, 256, 256)


def time_softmax(
    dtype: torch.dtype, rounds: int, calls: int, shape=SHAPE, dim: int = -1
) -> dict[str, float]:
    """Median microseconds per call of each side, the two alternating round by round."""
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
    sides = {
        "torch": lambda: torch.softmax(x, dim),
        "turbogelu": lambda: turbogelu.softmax(x, dim),
    }
    samples: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(rounds):
        for name, f in sides.items():
            f()  # warm
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            samples[name].append((time.perf_counter() - t0) / calls * 1e6)
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--shape", default=",".join(map(str, SHAPE)), help="e.g. 32,256,256")
    ap.add_argument("--dim", type=int, default=-1, help="the softmax's dim (-1)")
    args = ap.parse_args()
    try:
        shape = tuple(int(s) for s in args.shape.split(","))
    except ValueError:
        ap.error(f"--shape takes comma-separated integers, got {args.shape!r}")
    torch.set_num_threads(1)
    print(
        f"one thread, shape {shape}, dim {args.dim}, medians of {args.rounds} rounds of "
        f"{args.calls} calls"
    )
    for dtype in (torch.float32, torch.bfloat16):
        t = time_softmax(dtype, args.rounds, args.calls, shape, args.dim)
        print(
            f"{str(dtype).removeprefix('torch.'):9s} torch.softmax {t['torch']:8.0f} us  "
            f"turbogelu.softmax {t['turbogelu']:8.0f} us  ours / torch "
            f"{t['turbogelu'] / t['torch']:.2f}x"
        )


if __name__ == "__main__":
    main()
