"""The benchmark's check of its baselines (``experiments.bench``): after the protocol, every
baseline row (PyTorch's, torch.compile's, the limits) is timed again alone, in a fresh process
of this interpreter, and flagged ``baseline_suspect`` when its interleaved median is more than
``ALONE_TOLERANCE`` off the alone one.

Why: the committed reference once had aten.gelu_backward in bfloat16 at 2377 us in the
interleaved protocol against 780-860 us alone (one run of four on the build machine; not
reproduced on others), and every ratio to it was 3x too flattering.

torch is imported inside functions only (the fresh process imports it to time its row).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .bench_targets import BASELINE_TOLERANCE
from .bench_timing import make_flush, steady_malloc, summarize, time_interleaved
from .bench_variants import SEED_CALLS, Skipped, cpu_isa, cpu_threads, make_variants

BASELINE_PROVIDERS = ("torch", "torch.compile", "limit")
ALONE_TOLERANCE = BASELINE_TOLERANCE  # |interleaved / alone - 1| above it: baseline_suspect
ALONE_ROUNDS = 10


def is_baseline(row: dict) -> bool:
    return row.get("provider") in BASELINE_PROVIDERS


def flag_baseline(row: dict, alone_p50_us: float, tolerance: float = ALONE_TOLERANCE) -> dict:
    """A copy of ``row`` with the median timed alone (``alone_p50_us``), the ratio of the
    interleaved median to it (``alone_ratio``) and ``baseline_suspect``: whether they differ
    by more than ``tolerance`` of the alone median."""
    if not alone_p50_us > 0:
        raise ValueError(f"the alone median must be positive, got {alone_p50_us!r}")
    ratio = row["p50_us"] / alone_p50_us
    return {
        **row,
        "alone_p50_us": alone_p50_us,
        "alone_ratio": ratio,
        "baseline_suspect": abs(ratio - 1.0) > tolerance,
    }


def alone_spec(row: dict, size: int, rounds: int, calls: int, **options) -> dict:
    """What a fresh process needs to time a protocol row alone: the row's direction, dtype,
    method, threads and device, the protocol's ``size`` (random elements; the 15 edge values
    are added as in the protocol), ``rounds`` x ``calls``, and ``options`` (flush, isa,
    malloc)."""
    return {
        "direction": row["direction"],
        "dtype": row["dtype"],
        "method": row["method"],
        "threads": row.get("threads", 1),
        "device": row.get("device", "cpu"),
        "size": size,
        "rounds": rounds,
        "calls": calls,
        "flush": bool(options.get("flush", False)),
        "isa": options.get("isa"),
        "malloc": options.get("malloc", "steady"),
    }


def time_alone(spec: dict) -> dict:
    """Time one protocol row by itself in this process (the child's side of
    ``check_alone``): {"p50_us", "p5_us", "p95_us", "rounds", "calls"}."""
    if spec.get("malloc", "steady") == "steady":
        steady_malloc()
    device = spec.get("device", "cpu")
    with cpu_isa(spec.get("isa")), cpu_threads(device, spec.get("threads", 1)):
        skipped: list = []
        variants = make_variants(
            spec["direction"],
            spec["dtype"],
            spec["size"],
            device=device,
            threads=spec.get("threads", 1),
            methods=[spec["method"]],
            skipped=skipped,
        )
        if not variants:
            reason = skipped[0][1] if skipped else "no such row here"
            raise Skipped(f"{spec['method']}: {reason}")
        flush = make_flush(device) if spec.get("flush") else None
        timings = time_interleaved(
            variants, spec["rounds"], spec["calls"], device=device, flush=flush
        )
    (rec,) = summarize(variants, timings, spec["calls"])
    return {k: rec[k] for k in ("p50_us", "p5_us", "p95_us", "rounds", "calls")}


def _alone_main(spec_json: str) -> int:
    """``python -c`` entry of the fresh process: prints ``time_alone``'s result as one JSON
    line (the last line of stdout), or {"error": ...}."""
    try:
        result = time_alone(json.loads(spec_json))
    except Exception as e:  # noqa: BLE001  (any failure is reported to the parent)
        print(json.dumps({"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}))
        return 1
    print(json.dumps(result))
    return 0


def run_alone(spec: dict, timeout: float = 600.0) -> dict:
    """Time ``spec`` in a fresh Python process (this interpreter, this environment):
    ``time_alone``'s result, or {"error": ...}."""
    code = (
        "import sys; from experiments.bench_alone import _alone_main;"
        " sys.exit(_alone_main(sys.argv[1]))"
    )
    try:
        proc = subprocess.run(  # in the checkout, where `experiments` imports from
            [sys.executable, "-c", code, json.dumps(spec)],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


def check_alone(
    records: Sequence[dict],
    size: int,
    rounds: int = ALONE_ROUNDS,
    calls: int = SEED_CALLS,
    *,
    tolerance: float = ALONE_TOLERANCE,
    progress: bool = False,
    **options,
) -> list[dict]:
    """The protocol's records, each baseline row (``is_baseline``) re-timed alone in a fresh
    process (``run_alone``, ``rounds`` x ``calls``) and flagged by ``flag_baseline``; a row
    whose check failed gets ``alone_error`` instead. ``options``: flush, isa, malloc, as the
    protocol ran."""
    out = []
    n_todo, done = sum(is_baseline(r) for r in records), 0
    for r in records:
        if not is_baseline(r):
            out.append(dict(r))
            continue
        done += 1
        spec = alone_spec(r, size, rounds, calls, **options)
        res = run_alone(spec)
        if "error" in res:
            row = {**r, "alone_error": res["error"]}
            note = f"FAILED ({res['error']})"
        else:
            row = flag_baseline(r, res["p50_us"], tolerance)
            row["alone_rounds"] = res["rounds"]
            note = f"{r['p50_us']:.1f} us interleaved, {res['p50_us']:.1f} us alone"
            note += " SUSPECT" if row["baseline_suspect"] else ""
        if progress:
            print(
                f"alone {done}/{n_todo}: {r['direction']} {r['dtype']} {r['method']}: {note}",
                file=sys.stderr,
                flush=True,
            )
        out.append(row)
    return out
