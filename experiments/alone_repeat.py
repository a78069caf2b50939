"""How repeatable is "the same call timed alone"? The benchmark flags a baseline row
``baseline_suspect`` when its interleaved median is more than 10 % off its median timed alone
in a fresh process (``experiments.bench_alone``). Whether such a flag says something about the
harness or only about the machine depends on how far two alone timings of the same call, in
two fresh processes, differ from each other. This times every baseline row of a benchmark run
alone twice more and sets the three medians side by side.

    python -m experiments.alone_repeat [--bench results/bench.jsonl] [--out FILE]

If |alone_b / alone_a - 1| exceeds the tolerance about as often as |interleaved / alone - 1|,
the flags measure the machine's run-to-run noise, not a bias of the interleaved protocol; a
bias (the 3x of the reference that once had aten.gelu_backward at 2377 us) would show as
interleaved/alone ratios far outside the alone/alone spread, all on one side.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from . import records
from .bench_alone import ALONE_ROUNDS, ALONE_TOLERANCE, alone_spec, is_baseline, run_alone
from .bench_report import load
from .bench_variants import SEED_CALLS, edge_values

REPO = Path(__file__).resolve().parent.parent


def _baseline_rows(path: Path) -> list[dict]:
    """The CPU protocol's baseline rows of the file's last run."""
    rows = [r for r in load(path) if r.get("bench") == "protocol" and r.get("device") == "cpu"]
    if not rows:
        raise SystemExit(
            f"{path}: no CPU protocol rows in its last run (run `python -m experiments bench`)"
        )
    return [r for r in rows if is_baseline(r)]


def measure(rows: list[dict], rounds: int, calls: int, progress=print) -> list[dict]:
    """Each row timed alone in two fresh processes: its interleaved and both alone medians."""
    out = []
    for i, r in enumerate(rows, 1):
        # the row's size counts the protocol's edge values, which the fresh process adds
        size = r["size"] - len(edge_values(r["dtype"]))
        spec = alone_spec(r, size, rounds, calls, flush=r.get("flush", False))
        a, b = run_alone(spec), run_alone(spec)
        if "error" in a or "error" in b:
            progress(f"{i}/{len(rows)} {r['method']}: {a.get('error') or b.get('error')}")
            continue
        row = {k: r[k] for k in ("direction", "dtype", "method", "size", "threads") if k in r}
        row |= {
            "interleaved_p50_us": r["p50_us"],
            "alone_a_p50_us": a["p50_us"],
            "alone_b_p50_us": b["p50_us"],
            "interleaved_over_alone_a": r["p50_us"] / a["p50_us"],
            "alone_b_over_alone_a": b["p50_us"] / a["p50_us"],
        }
        out.append(row)
        progress(
            f"{i}/{len(rows)} {r['direction']} {r['dtype']} {r['method']}: interleaved "
            f"{r['p50_us']:.0f}, alone {a['p50_us']:.0f} / {b['p50_us']:.0f} us"
        )
    return out


def summary(rows: list[dict], tolerance: float = ALONE_TOLERANCE) -> dict:
    """How often, and how far, each pair is more than ``tolerance`` apart."""

    def stats(key):
        devs = [abs(r[key] - 1.0) for r in rows]
        return {
            "off_by_more_than_tolerance": sum(d > tolerance for d in devs),
            "median_abs_deviation": statistics.median(devs),
            "max_abs_deviation": max(devs),
            "slower_than_alone_a": sum(r[key] > 1.0 for r in rows),
        }

    return {
        "rows": len(rows),
        "tolerance": tolerance,
        "interleaved_vs_alone": stats("interleaved_over_alone_a"),
        "alone_vs_alone": stats("alone_b_over_alone_a"),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.alone_repeat", description=__doc__)
    p.add_argument("--bench", type=Path, default=REPO / "results" / "bench.jsonl")
    p.add_argument("--out", type=Path, default=REPO / "results" / "alone_repeat.json")
    p.add_argument("--rounds", type=int, default=ALONE_ROUNDS)
    p.add_argument("--calls", type=int, default=SEED_CALLS)
    args = p.parse_args(argv)
    if not args.bench.is_file():
        p.error(f"{args.bench} not found: run `python -m experiments bench` first")
    rows = measure(
        _baseline_rows(args.bench),
        args.rounds,
        args.calls,
        progress=lambda s: print(s, file=sys.stderr, flush=True),
    )
    if not rows:
        raise SystemExit("no baseline row could be timed alone")
    s = summary(rows)
    records.write_json(
        args.out,
        {
            "command": "python -m experiments.alone_repeat " + " ".join(argv or sys.argv[1:]),
            "machine": records.machine(),
            "bench": str(args.bench),
            "rounds": args.rounds,
            "calls": args.calls,
            "summary": s,
            "rows": rows,
        },
    )
    for pair in ("interleaved_vs_alone", "alone_vs_alone"):
        t = s[pair]
        print(
            f"{pair}: {t['off_by_more_than_tolerance']} of {s['rows']} rows off by more than "
            f"{s['tolerance']:.0%}; median |deviation| {t['median_abs_deviation']:.1%}, max "
            f"{t['max_abs_deviation']:.1%}; {t['slower_than_alone_a']} slower than alone"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
