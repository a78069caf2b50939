"""Does a cache-resident copy run slower right after another row than after itself?

The benchmark's protocol times a 1M-element copy into a preallocated output (its `limit: copy`
row) in batches of 100 calls between batches of the other rows (F.gelu and the rest, which
allocate their outputs). This probe, one thread, in one process:

* the time of each call of a batch of copies that follows 20 calls of F.gelu, medians over
  repeats, grouped by position in the batch (how long the copy takes to settle);
* the mean of a 100-call batch after F.gelu, after copies, and after F.gelu followed by the
  untimed settle calls the benchmark now makes (``bench_timing.SETTLE_FRACTION``).

    PYTHONPATH=. .venv/bin/python experiments/archive/baseline_alone/settle.py [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from experiments.bench_timing import SETTLE_FRACTION

SPANS = ((0, 1), (1, 5), (5, 20), (20, 50), (50, 100))


def batch_us(fn, calls: int) -> float:
    t = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t) / calls / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(args.size).to(getattr(torch, args.dtype))
    out = torch.empty_like(x)

    def copy():
        out.copy_(x)

    def other():
        F.gelu(x)

    per_call: list[list[float]] = [[] for _ in range(SPANS[-1][1])]
    for _ in range(args.repeats):
        batch_us(other, 20)
        for i in range(len(per_call)):
            per_call[i].append(batch_us(copy, 1))
    med = [statistics.median(p) for p in per_call]
    print(f"{args.size} {args.dtype} elements, one thread: copy into a preallocated output")
    print("calls after 20 calls of F.gelu   median us per call")
    for a, b in SPANS:
        print(f"  {a:3d}-{b - 1:<3d}                         {statistics.median(med[a:b]):8.1f}")

    settle = int(SETTLE_FRACTION * 100)

    def after(before, untimed: int):
        def case() -> float:
            if before is not None:
                batch_us(before, 20)
            if untimed:
                batch_us(copy, untimed)
            return batch_us(copy, 100)

        return case

    cases = {
        "after copies": after(None, 0),
        "after F.gelu": after(other, 0),
        f"after F.gelu, {settle} untimed calls": after(other, settle),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeats):
        for k, f in cases.items():
            times[k].append(f())
    print("100-call batch                   median us per call")
    for k, v in times.items():
        print(f"  {k:31s}{statistics.median(v):8.1f}")


if __name__ == "__main__":
    main()
