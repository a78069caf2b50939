"""The benchmark's check of its baselines (``experiments.bench``): after the protocol, every
baseline row (PyTorch's, torch.compile's, the limits) is timed again alone, one row at a time,
in ``ALONE_REPEATS`` fresh processes of this interpreter (each process times every row in
turn; the repeats alternate the order), and flagged ``baseline_suspect`` when its interleaved
median lies more than ``ALONE_TOLERANCE`` outside the range of its alone medians.

Why: the committed reference once had aten.gelu_backward in bfloat16 at 2377 us in the
interleaved protocol against 780-860 us alone (one run of four on the build machine; not
reproduced on others), and every ratio to it was 3x too flattering.

Why a range and not one alone timing: on a shared VM two alone timings of the same call, in
two fresh processes minutes apart, differ by more than 10 % about as often as the
interleaved median differs from one of them (``experiments.alone_repeat``: 15 of 36 rows after
the 2026-12-01 reference). Against a single alone timing the flag measured that noise; against
the spread of several it still catches a bias of the interleaved protocol (the 3x above lies
far outside any alone range) without flagging the machine's drift.

torch is imported inside functions only (the fresh process imports it to time its rows).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .bench_targets import BASELINE_TOLERANCE
from .bench_timing import make_flush, steady_malloc, summarize, time_interleaved
from .bench_variants import SEED_CALLS, Skipped, cpu_isa, cpu_threads, make_variants

BASELINE_PROVIDERS = ("torch", "torch.compile", "limit")
ALONE_TOLERANCE = BASELINE_TOLERANCE  # this far outside the alone range: baseline_suspect
ALONE_ROUNDS = 10
ALONE_REPEATS = 3  # fresh processes, each timing every baseline row alone
ALONE_SECONDS_PER_ROW = 120.0  # a fresh process's time-out: this per row it times


def is_baseline(row: dict) -> bool:
    return row.get("provider") in BASELINE_PROVIDERS


def flag_baseline(
    row: dict, alone_p50_us: float | Sequence[float], tolerance: float = ALONE_TOLERANCE
) -> dict:
    """A copy of ``row`` with its alone medians (``alone_p50s_us``, one per fresh process),
    their median (``alone_p50_us``), the ratio of the interleaved median to it
    (``alone_ratio``), their spread (``alone_spread``: max / min - 1) and ``baseline_suspect``:
    whether the interleaved median is above (1 + ``tolerance``) x the slowest alone median or
    below the fastest divided by (1 + ``tolerance``). One alone median: within ``tolerance``
    of it."""
    alone = [alone_p50_us] if isinstance(alone_p50_us, (int, float)) else list(alone_p50_us)
    if not alone or not all(a > 0 for a in alone):
        raise ValueError(f"the alone medians must be positive, got {alone_p50_us!r}")
    lo, hi, p50 = min(alone), max(alone), row["p50_us"]
    median = statistics.median(alone)
    return {
        **row,
        "alone_p50_us": median,
        "alone_p50s_us": alone,
        "alone_ratio": p50 / median,
        "alone_spread": hi / lo - 1.0,
        "baseline_suspect": p50 > hi * (1.0 + tolerance) or p50 * (1.0 + tolerance) < lo,
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


def _alone_main(specs_json: str) -> int:
    """``python -c`` entry of the fresh process: times each spec of the JSON list in turn and
    prints one JSON line per spec as it finishes: ``time_alone``'s result, or {"error": ...}
    for a row that could not be timed (the others still are)."""
    for spec in json.loads(specs_json):
        try:
            result = time_alone(spec)
        except Exception as e:  # noqa: BLE001  (any failure is reported to the parent)
            result = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        print(json.dumps(result), flush=True)
    return 0


def run_alone_batch(specs: Sequence[dict], timeout: float | None = None) -> list[dict]:
    """Time each of ``specs`` alone, one after the other, in one fresh Python process (this
    interpreter, this environment): ``time_alone``'s result per spec, or {"error": ...}; a
    spec the process did not reach (it crashed or timed out) gets the reason."""
    if not specs:
        return []
    timeout = ALONE_SECONDS_PER_ROW * len(specs) if timeout is None else timeout
    code = (
        "import sys; from experiments.bench_alone import _alone_main;"
        " sys.exit(_alone_main(sys.argv[1]))"
    )
    try:
        proc = subprocess.run(  # in the checkout, where `experiments` imports from
            [sys.executable, "-c", code, json.dumps(list(specs))],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        stdout, missing = proc.stdout, None
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        stdout = out.decode() if isinstance(out, bytes) else out
        missing = f"timed out after {timeout:.0f} s"
    results = [json.loads(ln) for ln in stdout.splitlines() if ln.startswith("{")]
    if len(results) < len(specs) and missing is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        missing = f"exit {proc.returncode}: {tail[:200]}"
    return results[: len(specs)] + [{"error": missing}] * (len(specs) - len(results))


def run_alone(spec: dict, timeout: float = 600.0) -> dict:
    """Time ``spec`` alone in a fresh Python process: ``time_alone``'s result, or
    {"error": ...}."""
    return run_alone_batch([spec], timeout)[0]


def check_alone(
    records: Sequence[dict],
    size: int,
    rounds: int = ALONE_ROUNDS,
    calls: int = SEED_CALLS,
    *,
    repeats: int = ALONE_REPEATS,
    tolerance: float = ALONE_TOLERANCE,
    progress: bool = False,
    **options,
) -> list[dict]:
    """The protocol's records, each baseline row (``is_baseline``) re-timed alone
    (``rounds`` x ``calls``) in ``repeats`` fresh processes (``run_alone_batch``; every other
    one takes the rows in reverse order, so no row is always timed first or last) and flagged
    by ``flag_baseline`` against the medians that succeeded; a row none of whose timings
    succeeded gets ``alone_error`` instead. ``options``: flush, isa, malloc, as the protocol
    ran."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    todo = [i for i, r in enumerate(records) if is_baseline(r)]
    specs = {i: alone_spec(records[i], size, rounds, calls, **options) for i in todo}
    timings: dict[int, list[dict]] = {i: [] for i in todo}
    for k in range(repeats):
        order = todo if k % 2 == 0 else todo[::-1]
        for i, res in zip(order, run_alone_batch([specs[i] for i in order]), strict=True):
            timings[i].append(res)
        if progress:
            errors = sum("error" in timings[i][-1] for i in order)
            print(
                f"alone check {k + 1}/{repeats}: {len(order)} rows timed in a fresh process"
                + (f", {errors} failed" if errors else ""),
                file=sys.stderr,
                flush=True,
            )
    out = [dict(r) for r in records]
    for i in todo:
        good = [t["p50_us"] for t in timings[i] if "error" not in t]
        if good:
            out[i] = flag_baseline(records[i], good, tolerance)
            out[i]["alone_rounds"] = rounds
        else:
            out[i]["alone_error"] = timings[i][0]["error"]
    return out
