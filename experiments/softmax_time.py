"""turbogelu.softmax against torch.softmax on the CPU, one thread: rows of the last dim of a
(32, 256, 256) tensor, float32 and bfloat16, interleaved rounds, medians per call (issue 18:
never slower than torch.softmax, faster in bfloat16). `--sweep` times every shape of SWEEP
(each kernel path: long rows, short rows side by side in SIMD lanes, other dims by blocks,
runs or lane by lane) and can write them to a JSON file.

    PYTHONPATH=$PWD python -m experiments.softmax_time [--rounds 31] [--calls 5]
        [--shape 32,256,256] [--dim -1] [--sweep [--json results/softmax_sweep.json]]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

import turbogelu

from . import records

SHAPE = (32, 256, 256)
# (shape, dim): 0.26M-2M elements each, one per path and edge of family_softmax_lanes /
# family_softmax (kernels/cpu/family_loops.h; rows of 128 or more go to the row kernel).
SWEEP = [
    ((65536, 4), -1),
    ((16384, 16), -1),
    ((8192, 33), -1),
    ((4096, 64), -1),
    ((2048, 127), -1),
    ((2048, 128), -1),
    ((1024, 256), -1),
    ((256, 1000), -1),
    ((64, 4096), -1),
    (SHAPE, -1),
    (SHAPE, 1),
    ((256, 4096), 0),
    ((4096, 64, 4), 1),
    ((2048, 64, 16), 1),
    ((1024, 64, 24), 1),
]


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


def sweep(rounds: int, calls: int) -> list[dict]:
    """Every SWEEP case in both dtypes, printed as it goes."""
    rows = []
    for shape, dim in SWEEP:
        for dtype in (torch.float32, torch.bfloat16):
            t = time_softmax(dtype, rounds, calls, shape, dim)
            row = {
                "shape": list(shape),
                "dim": dim,
                "dtype": str(dtype).removeprefix("torch."),
                "torch_us": t["torch"],
                "turbogelu_us": t["turbogelu"],
                "ratio": t["turbogelu"] / t["torch"],
            }
            rows.append(row)
            print(
                f"{str(shape):18s} dim {dim:2d} {row['dtype']:9s} torch {t['torch']:8.0f} us  "
                f"ours {t['turbogelu']:8.0f} us  {row['ratio']:.2f}x",
                flush=True,
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--shape", default=",".join(map(str, SHAPE)), help="e.g. 32,256,256")
    ap.add_argument("--dim", type=int, default=-1, help="the softmax's dim (-1)")
    ap.add_argument("--sweep", action="store_true", help="time every shape of SWEEP instead")
    ap.add_argument("--json", type=Path, help="with --sweep: write the rows here")
    args = ap.parse_args()
    if args.rounds < 1 or args.calls < 1:
        ap.error("--rounds and --calls must be at least 1")
    if args.json is not None and not args.sweep:
        ap.error("--json goes with --sweep")
    try:
        shape = tuple(int(s) for s in args.shape.split(","))
    except ValueError:
        ap.error(f"--shape takes comma-separated integers, got {args.shape!r}")
    torch.set_num_threads(1)
    print(
        f"one thread, medians of {args.rounds} interleaved rounds of {args.calls} calls"
        + ("" if args.sweep else f", shape {shape}, dim {args.dim}")
    )
    if args.sweep:
        rows = sweep(args.rounds, args.calls)
        worst = max(rows, key=lambda r: r["ratio"])
        print(
            f"slowest against torch: {worst['shape']} dim {worst['dim']} {worst['dtype']} "
            f"{worst['ratio']:.2f}x"
        )
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            meta = records.machine_info() | {
                "command": "python -m experiments.softmax_time --sweep "
                f"--rounds {args.rounds} --calls {args.calls}",
            }
            records.write_json(args.json, {"meta": meta, "rows": rows})
            print(f"wrote {args.json}")
        return
    for dtype in (torch.float32, torch.bfloat16):
        t = time_softmax(dtype, args.rounds, args.calls, shape, args.dim)
        print(
            f"{str(dtype).removeprefix('torch.'):9s} torch.softmax {t['torch']:8.0f} us  "
            f"turbogelu.softmax {t['turbogelu']:8.0f} us  ours / torch "
            f"{t['turbogelu'] / t['torch']:.2f}x"
        )


if __name__ == "__main__":
    main()
