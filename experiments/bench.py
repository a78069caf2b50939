"""Speed benchmark behind ``python -m experiments bench``: the seeds' protocol, the machine's
limits, sweeps, one long-format results file.

Parts (``--parts``, all by default):

* ``protocol``: the TurboGeLU write-up's protocol. 1,048,576 random elements (randn * 3, so
  that both the polynomial window and the clamped tails are hit) plus the 15 edge values of
  ``edge_values`` (+-0, +-inf, NaN, +-R and the neighbours of R, the smallest subnormals, the
  largest finite values), 50 timed batches of 100 calls, one thread, forward and backward,
  float32 / float16 / bfloat16; methods ``torch exact`` (``F.gelu``), ``torch approx``
  (``approximate="tanh"``), ``turbogelu`` (the default program of this CPU: ``cells`` where
  AVX-512 has two-table permutes, else ``poly``; the row's ``program`` says which), and
  beyond the seed: ``turbogelu (poly)`` and ``turbogelu (cells)`` (each program forced),
  ``turbogelu (Estrin)`` (the polynomial by Estrin), ``torch exact (oneDNN off)``,
  ``torch.compile exact`` (compiled once, before timing) and the limit rows, what moving
  the same bytes costs, each into one preallocated output (the record's
  ``preallocated_output``): ``limit: copy`` (``out.copy_(x)``) and ``limit: stream copy``
  (non-temporal stores) for the forward, ``limit: mul`` (``torch.mul(g, x, out=out)``) and
  ``limit: stream read2`` for the backward. The limit of a row is the faster of its limit
  rows. Then every baseline row (torch, torch.compile, limits) is timed again alone, one row
  at a time, in three fresh processes (``check_alone``; ``--no-alone-check`` skips it,
  ``--quick`` does unless ``--alone-check``); a row whose interleaved median is more than 10%
  outside the range of its alone medians is flagged ``baseline_suspect``.
* ``sweep``: float32 over sizes from cache- to DRAM-resident (64K, 1M, 4M, 64M, 256M; sizes
  whose tensors do not fit in ``--max-memory`` are skipped, and the output says so), output
  allocated / ``out=`` / in place, 1 thread and all threads; turbogelu, torch exact, limits.
  At 64M (``--sweep-out-sizes``) float16 and bfloat16 (``--sweep-out-dtypes``) add
  turbogelu's and the limits' ``out=`` rows, interleaved with float32's: the DRAM targets.
  The ``out=`` limits include the streaming ones (``_stream_copy.out``, ``_stream_read2.out``):
  in DRAM a non-temporal store skips the read for ownership, so there the fastest limit is
  usually the streaming row.
* ``degree``: operation count against time. Specs of GELU (forward) and GELU' (backward) of
  every compiled degree (2..12), fitted by least squares on [0, R] (R: the exact GELU's
  clamp, ``R_EXACT``), timed through ``turbogelu::poly_gelu`` (the shipped templated kernels
  with coefficients passed at run time) by Horner and by Estrin, beside the shipped op's
  polynomial (and its default program, where that is another) and the limit, every row below
  the autograd layer.

* ``family`` (``--family``, or named in ``--parts``; not among the default parts, ``make
  reproduce`` runs it): the activation family (sigmoid, tanh, SiLU, softcap, SwiGLU) against
  PyTorch's eager ops, forward and backward, at 1M, 4M and 64M (``out=``) elements, 1 and all
  threads, with the limit rows and the paper's Table 3 beside them: ``experiments.bench_family``.

After the parts, ``experiments.bench_targets`` evaluates the speed targets from the run's rows:
printed, and written beside ``--out`` (``results/bench_targets.json``).

Method (shared, noisy machines: the method is the point):

* Variants are interleaved in one process: each round visits every variant of a part (of a
  size, for the sweep) once, in an order shuffled per round by a seeded RNG, and times one
  batch of calls. A slow stretch of the machine hits all variants alike. Reported: median
  (p50), p5 and p95 over rounds of the time per call, wall time and this thread's CPU time
  (``time.thread_time_ns``; wall well above CPU means the thread was descheduled or waited).
* Inputs are made (seeded) before timing; every variant is warmed up; the garbage collector
  is off while timing. glibc is told to keep freed memory (``steady_malloc``) so that an
  allocating call costs the same in every process; above 32 MiB outputs are mmap'ed, and the
  sweep's allocating rows then include the page faults of a fresh output (the point of
  measuring ``out=`` beside them).
* cuda / mps: the device is synchronized before and after each batch, a cuda batch is timed
  with ``torch.cuda.Event`` (execution, not enqueue); ``--flush`` writes a buffer twice the
  size of the last-level cache before every batch (outside the timing). CPU-only rows
  (oneDNN, streaming stores, the ISA) are left out on a GPU.

Results: one row per kernel x provider x direction x dtype x size x threads x out-mode (plus
method options) appended to a JSON-lines file (``--out``, default ``results/bench.jsonl``)
with p50/p5/p95, the machine and the versions; ``experiments.bench_report`` draws the tables and
the plots from that file. torch is imported inside functions only, so importing this module
(the CLI does) does not import torch.

Where things are: this module runs the parts (``run_protocol``, ``run_sweep``, ``run_degree``,
``run_grain``, ``run_methods``; the family's, ``bench_family.run_family``) and is the entry
the notebooks and the tests use (``bench.*`` also gives the names below); the rows and their
switches are in ``bench_variants``, the timing in ``bench_timing``, the check of the baselines
timed alone in ``bench_alone``, the command line in ``bench_cli``, the machine description and
the results file's writer in ``records``, the tables and figures in ``bench_report``, the
targets in ``bench_targets``.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Sequence

from . import bench_report
from .bench_alone import (  # noqa: F401  (the benchmark's parts, also from here: bench.*)
    ALONE_REPEATS,
    ALONE_ROUNDS,
    ALONE_TOLERANCE,
    BASELINE_PROVIDERS,
    alone_spec,
    check_alone,
    flag_baseline,
    is_baseline,
    run_alone,
    run_alone_batch,
    time_alone,
)
from .bench_report import (  # noqa: F401  (the notebook's entry points, also from here)
    add_ratios,
    degree_table,
    load,
    plot_all,
    plot_bars,
    plot_degrees,
    plot_sweep,
    protocol_table,
    sweep_table,
)
from .bench_timing import (  # noqa: F401
    Progress,
    Timings,
    Variant,
    available_memory,
    make_flush,
    steady_malloc,
    summarize,
    time_interleaved,
)
from .bench_variants import (  # noqa: F401
    CPU_ONLY,
    DEGREES,
    DTYPES_ALL,
    DTYPES_QUICK,
    INPLACE_MAX_CALLS,
    METHODS,
    R_EXACT,
    SEED_CALLS,
    SEED_ROUNDS,
    SEED_SIZE,
    SWEEP_ELEMENTS_PER_BATCH,
    Skipped,
    cpu_isa,
    cpu_program,
    cpu_threads,
    degree_variants,
    edge_values,
    fitted_specs,
    make_inputs,
    make_variants,
    num_threads,
    parallel_grain,
    sweep_bytes,
    sweep_variants,
)
from .records import describe_machine, machine_info, quantile, write_jsonl  # noqa: F401

SWEEP_SIZES = (1 << 16, 1 << 20, 1 << 22, 1 << 26, 1 << 28)
# the DRAM rows of the 16-bit dtypes: turbogelu's and the limit's out= rows at these sizes
SWEEP_OUT_DTYPES, SWEEP_OUT_SIZES = ("float16", "bfloat16"), (1 << 26,)
DEFAULT_MAX_MEMORY_GIB = 6.0
GRAIN_SIZES = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 1 << 20)
GRAIN_ELEMENTS_PER_BATCH = 1 << 21  # --grain: calls per batch = max(--calls, this / size)
# --grain: more threads count as faster at a size when their median is this much faster and
# they won in this share of the rounds (paired: same round, same state of the machine).
GRAIN_MIN_SPEEDUP, GRAIN_MIN_WON = 1.05, 0.75


# ---------------------------------------------------------------- runs


def run_protocol(
    directions: Sequence[str],
    dtypes: Sequence[str],
    size: int,
    rounds: int,
    calls: int,
    *,
    device: str = "cpu",
    threads: int = 1,
    methods: Sequence[str] | None = None,
    flush: Callable[[], object] | None = None,
    skipped: list | None = None,
    progress: bool = False,
) -> list[dict]:
    """The protocol's records (all directions x dtypes interleaved in one timing)."""
    variants = []
    with cpu_threads(device, threads):
        for d in directions:
            for t in dtypes:
                ms = None if methods is None else [m for m in methods if m in METHODS[d]]
                variants += make_variants(
                    d, t, size, device=device, threads=threads, methods=ms, skipped=skipped
                )
        bar = Progress(rounds * len(variants), "protocol", progress)
        try:
            timings = time_interleaved(
                variants, rounds, calls, device=device, flush=flush, progress=bar
            )
        finally:
            bar.close()
    return summarize(variants, timings, calls)


def run_sweep(
    sizes: Sequence[int],
    threads: Sequence[int],
    directions: Sequence[str],
    rounds: int,
    calls: int,
    *,
    out_dtypes: Sequence[str] = SWEEP_OUT_DTYPES,
    out_sizes: Sequence[int] = SWEEP_OUT_SIZES,
    max_memory: float = DEFAULT_MAX_MEMORY_GIB,
    skipped: list | None = None,
    progress: bool = False,
) -> list[dict]:
    """The size sweep (CPU): sizes one after the other, every variant of a size (directions x
    threads x methods x out modes) interleaved. float32 has every row; each dtype of
    ``out_dtypes`` adds turbogelu's and the limit's ``out=`` rows at the sizes of
    ``out_sizes`` (the DRAM targets of ``bench_targets``), interleaved with float32's. What
    does not fit in ``max_memory`` GiB (or 80% of the available memory) is skipped and
    reported: a whole size, or only the extra dtypes."""
    import torch

    skipped = [] if skipped is None else skipped
    avail = available_memory()
    budget = max_memory * (1 << 30)
    if avail is not None:
        budget = min(budget, 0.8 * avail)

    def over(need: int) -> str:
        return (
            f"needs {need / (1 << 30):.1f} GiB, over the budget of {budget / (1 << 30):.1f}"
            f" GiB (--max-memory {max_memory:g}, available"
            f" {'?' if avail is None else f'{avail / (1 << 30):.1f}'} GiB)"
        )

    plan = []  # (size, [dtypes]): float32 first
    for size in sizes:
        need = sweep_bytes(size)
        if need > budget:
            skipped.append(({"bench": "sweep", "size": size, "dtype": "float32"}, over(need)))
            continue
        dtypes = ["float32"]
        for dt in out_dtypes if size in out_sizes else ():
            if dt == "float32":
                continue
            extra = sweep_bytes(size, _dtype_size(dt), only_out=True)
            if need + extra > budget:
                skipped.append(({"bench": "sweep", "size": size, "dtype": dt}, over(need + extra)))
                continue
            need += extra
            dtypes.append(dt)
        plan.append((size, dtypes))

    def n_variants(dtypes):
        return len(threads) * sum(
            len(sweep_variants(d, 1024, 1, dtype=dt, only_out=dt != "float32"))
            for d in directions
            for dt in dtypes
        )

    bar = Progress(rounds * sum(n_variants(dts) for _, dts in plan), "sweep", progress)
    records = []
    try:
        for size, dtypes in plan:
            variants = []
            for dt in dtypes:
                x, g = make_inputs(dt, size)
                inputs = (x, g, torch.empty_like(x))
                variants += [
                    v
                    for d in directions
                    for t in threads
                    for v in sweep_variants(
                        d, size, t, dtype=dt, calls=calls, inputs=inputs, only_out=dt != "float32"
                    )
                ]
            timings = time_interleaved(variants, rounds, calls, warmup=1, progress=bar)
            records += summarize(variants, timings, calls)
            del x, g, inputs, variants
            gc.collect()
    finally:
        bar.close()
    return records


def _dtype_size(dtype: str) -> int:
    return {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}[dtype]


def run_degree(
    size: int,
    rounds: int,
    calls: int,
    *,
    degrees: Sequence[int] = DEGREES,
    threads: int = 1,
    progress: bool = False,
) -> list[dict]:
    """Operation count vs time: every degree x scheme x direction interleaved."""
    variants = degree_variants(size, degrees, threads=threads)
    bar = Progress(rounds * len(variants), "degree", progress)
    try:
        timings = time_interleaved(variants, rounds, calls, progress=bar)
    finally:
        bar.close()
    return summarize(variants, timings, calls)


def run_grain(
    sizes: Sequence[int], threads: int, rounds: int, calls: int
) -> tuple[list[dict], int | None, tuple[float, float, float]]:
    """turbogelu float32 forward, 1 thread against ``threads`` threads, grain 1.

    Returns the rows (one per size), the smallest size from which ``threads`` threads are
    ``faster`` at that size and every larger one (or None), and the control: torch's
    F.gelu at the largest size, (1 thread us, ``threads`` threads us, speedup)."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401

    tg = torch.ops.turbogelu
    variants = []
    for size in sizes:
        x, _ = make_inputs("float32", size)
        n = max(calls, GRAIN_ELEMENTS_PER_BATCH // size)
        for t in (1, threads):
            variants.append(
                Variant((size, t), lambda x=x: tg.gelu(x), lambda t=t: num_threads(t), n)
            )
    # Control: torch's own parallel op, to tell "turbogelu is not parallel" from "the machine
    # has no second CPU to give".
    xc, _ = make_inputs("float32", sizes[-1])
    nc = max(calls, GRAIN_ELEMENTS_PER_BATCH // sizes[-1])
    for t in (1, threads):
        variants.append(Variant(("control", t), lambda: F.gelu(xc), lambda t=t: num_threads(t), nc))
    with parallel_grain(1):
        timings = time_interleaved(variants, rounds, calls)
    rows = []
    for size in sizes:
        w1, wn = timings.wall[(size, 1)], timings.wall[(size, threads)]
        m1, mn = statistics.median(w1), statistics.median(wn)
        rows.append(
            {
                "size": size,
                "t1_us": m1 / 1e3,
                "tn_us": mn / 1e3,
                "t1_p5_us": quantile(w1, 0.05) / 1e3,
                "t1_p95_us": quantile(w1, 0.95) / 1e3,
                "tn_p5_us": quantile(wn, 0.05) / 1e3,
                "tn_p95_us": quantile(wn, 0.95) / 1e3,
                "speedup": m1 / mn,
                # paired: same round, so the same state of the machine
                "tn_faster_rounds": sum(a > b for a, b in zip(w1, wn, strict=True)) / len(w1),
                "calls": max(calls, GRAIN_ELEMENTS_PER_BATCH // size),
            }
        )
    crossover = None
    for r in reversed(rows):
        if not faster(r):
            break
        crossover = r["size"]
    c1 = statistics.median(timings.wall[("control", 1)])
    cn = statistics.median(timings.wall[("control", threads)])
    return rows, crossover, (c1 / 1e3, cn / 1e3, c1 / cn)


def faster(row: dict) -> bool:
    """Whether more threads are faster at this --grain row, beyond the noise."""
    return row["speedup"] >= GRAIN_MIN_SPEEDUP and row["tn_faster_rounds"] >= GRAIN_MIN_WON


def render_grain_table(rows: Sequence[dict], threads: int) -> str:
    lines = [
        f"| size | 1 thread us | {threads} threads us | speedup | {threads} threads faster in |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {bench_report.fmt_us(r['t1_us'])}"
            f" | {bench_report.fmt_us(r['tn_us'])} | {r['speedup']:.2f}"
            f" | {100 * r['tn_faster_rounds']:.0f}% of rounds |"
        )
    return "\n".join(lines)


def run_methods(
    methods: Sequence[str],
    directions: Sequence[str] = ("forward", "backward"),
    dtypes: Sequence[str] = ("float32",),
    size: int = 1 << 20,
    rounds: int = 30,
    calls: int = 10,
    threads: int = 1,
    malloc: str = "steady",
) -> list[dict]:
    """``run_protocol`` restricted to some methods (e.g. the two polynomial schemes,
    "turbogelu (poly)" and "turbogelu (Estrin)"), timed interleaved as ever, on ``threads``
    threads (one by default, as ``--quick``: on a shared machine more threads mostly measure
    the neighbours). The notebooks use it to time a few rows without the whole table.

    ``malloc="steady"`` (the default, as the command line's) calls ``steady_malloc`` first, a
    process-wide setting, so that a notebook's timings see the same allocator as the
    benchmark's. Each row records which it was ("malloc": "steady", or "default" where it was
    not asked for or not glibc). Ratios to the limit rows also need the benchmark's 100 calls
    per batch: in batches of 10 the first call's cache misses (its data evicted by the other
    rows) made the float32 copy 140 us instead of 115 us in one process."""
    if malloc not in ("steady", "default"):
        raise ValueError(f"malloc must be 'steady' or 'default', not {malloc!r}")
    known = {m for d in directions for m in METHODS[d]}
    if not set(methods) & known:
        raise ValueError(f"no method of {list(methods)} in {sorted(known)}")
    state = "steady" if malloc == "steady" and steady_malloc() else "default"
    rows = run_protocol(directions, dtypes, size, rounds, calls, threads=threads, methods=methods)
    for r in rows:
        r["malloc"] = state
    return bench_report.add_ratios(rows)  # vs_turbogelu: each row's p50 over turbogelu's
