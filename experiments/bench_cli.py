"""``python -m experiments bench``: the command line of the speed benchmark (its parts, method
and results: ``experiments.bench``). Free of torch at import time: the CLI's parser is built
for every subcommand.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import time

from turbogelu.cli import positive_int

from . import bench_family, bench_report
from .bench import (
    DEFAULT_MAX_MEMORY_GIB,
    GRAIN_ELEMENTS_PER_BATCH,
    GRAIN_MIN_SPEEDUP,
    GRAIN_MIN_WON,
    GRAIN_SIZES,
    SWEEP_OUT_DTYPES,
    SWEEP_SIZES,
    check_alone,
    cpu_program,
    is_baseline,
    render_grain_table,
    run_degree,
    run_grain,
    run_protocol,
    run_sweep,
)
from .bench_alone import ALONE_REPEATS, ALONE_ROUNDS, ALONE_TOLERANCE
from .bench_timing import make_flush, steady_malloc
from .bench_variants import (
    DTYPES_ALL,
    DTYPES_QUICK,
    METHODS,
    SEED_CALLS,
    SEED_ROUNDS,
    SEED_SIZE,
    SWEEP_ELEMENTS_PER_BATCH,
    cpu_isa,
)
from .records import describe_machine, machine_info, write_jsonl

PARTS = ("protocol", "sweep", "degree", "family")
DEFAULT_PARTS = "protocol,sweep,degree"  # the family: --family, or named in --parts
DEFAULT_OUT = "results/bench.jsonl"


def _int_list(text: str) -> list[int]:
    """'65536,1M,4M,64M,256M' or '2:12' (inclusive)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            a, b = part.split(":")
            out += list(range(int(a), int(b) + 1))
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(part[-1:].upper(), 1)
        out.append(int(part[:-1]) * mult if mult > 1 else int(part))
    return out


def add_arguments(p) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run (< 1 min): the protocol at 10 rounds x 10 calls, a sweep of 64K and"
        " 1M, the degree curve at 64K",
    )
    p.add_argument(
        "--grain",
        action="store_true",
        help="only measure the parallel-grain crossover (1 thread vs all threads over sizes)",
    )
    p.add_argument(
        "--parts",
        default=DEFAULT_PARTS,
        help=f"comma-separated, of {', '.join(PARTS)} (default {DEFAULT_PARTS}; family: the"
        " activation family's benchmark, experiments/bench_family.py)",
    )
    p.add_argument(
        "--family",
        action="store_true",
        help="the activation family's benchmark (sigmoid, tanh, silu, softcap, swiglu against"
        " PyTorch's eager ops, the paper's Table 3 beside it): alone, or with the parts that"
        " --parts names",
    )
    p.add_argument(
        "--functions",
        default=None,
        help="the family's functions, comma-separated (default all:"
        f" {','.join(bench_family.FUNCTIONS)}); implies --family",
    )
    p.add_argument(
        "--family-sizes",
        default=None,
        help="the family's sizes (default 1M,4M,64M; --quick 64K,1M); from"
        f" {bench_report.size_label(bench_family.OUT_FROM)} on, out=",
    )
    p.add_argument(
        "--family-paper-size",
        action="store_true",
        help="add the paper's HBM size, 268435456 elements, to the family's sizes (about 5 GiB"
        " per 16-bit dtype and 10 GiB for float32: raise --max-memory)",
    )
    p.add_argument(
        "--family-threads", default="1,all", help="thread counts of the family (default 1,all)"
    )
    p.add_argument(
        "--family-rounds",
        type=int,
        default=None,
        help=f"the family's rounds in cache-sized rows ({bench_family.ROUNDS};"
        f" --quick {bench_family.QUICK_ROUNDS})",
    )
    p.add_argument(
        "--family-dram-rounds",
        type=int,
        default=None,
        help=f"the family's rounds from {bench_report.size_label(bench_family.OUT_FROM)}"
        f" elements on ({bench_family.DRAM_ROUNDS}; --quick {bench_family.QUICK_ROUNDS})",
    )
    p.add_argument(
        "--softcap-cap",
        type=float,
        default=bench_family.SOFTCAP_CAP,
        help=f"softcap's c (default {bench_family.SOFTCAP_CAP:g}: Gemma 2's attention softcap)",
    )
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N or mps")
    p.add_argument(
        "--size",
        type=positive_int,
        default=SEED_SIZE,
        help="protocol / degree elements (default 1048576; the protocol adds 15 edge values)",
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help="protocol rounds (50; --quick 10; --grain 50)",
    )
    p.add_argument(
        "--calls",
        type=positive_int,
        default=None,
        help="calls per timed batch (100; --quick 10; grain 20)",
    )
    p.add_argument(
        "--dtypes",
        default=None,
        help="protocol dtypes, comma-separated (default float32,float16,bfloat16)",
    )
    p.add_argument("--direction", choices=("forward", "backward", "both"), default="both")
    p.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="protocol intra-op threads (default 1; with --grain, the threads compared to 1: all)",
    )
    p.add_argument(
        "--methods", default=None, help="protocol methods, comma-separated (default all)"
    )
    p.add_argument("--no-compile", action="store_true", help="leave out torch.compile rows")
    p.add_argument(
        "--sweep-sizes", default=None, help="e.g. 64K,1M,4M,64M,256M (default; --quick 64K,1M)"
    )
    p.add_argument(
        "--sweep-threads", default="1,all", help="thread counts of the sweep (default 1,all)"
    )
    p.add_argument("--sweep-rounds", type=int, default=None, help="(20; --quick 5)")
    p.add_argument(
        "--sweep-out-dtypes",
        default=",".join(SWEEP_OUT_DTYPES),
        help="dtypes whose out= rows (turbogelu, limit) join the sweep at --sweep-out-sizes"
        " (default float16,bfloat16; 'none': float32 only)",
    )
    p.add_argument(
        "--sweep-out-sizes",
        default="64M",
        help="sizes of those rows, when in the sweep's sizes (default 64M: the DRAM targets)",
    )
    p.add_argument(
        "--alone-check",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the protocol, time each baseline row (torch, torch.compile, limits) alone"
        " in --alone-repeats fresh processes and flag it when its interleaved median is more"
        f" than {100 * ALONE_TOLERANCE:.0f}%% outside the range of its alone medians (default:"
        " on; --quick: off). About 1 min per process for the 36 rows of a full run on a"
        " 2-vCPU machine",
    )
    p.add_argument(
        "--alone-repeats",
        type=int,
        default=ALONE_REPEATS,
        help=f"fresh processes of the alone check (default {ALONE_REPEATS})",
    )
    p.add_argument(
        "--alone-rounds",
        type=int,
        default=ALONE_ROUNDS,
        help=f"rounds of each alone timing (default {ALONE_ROUNDS}; calls: the protocol's)",
    )
    p.add_argument(
        "--max-memory",
        type=float,
        default=DEFAULT_MAX_MEMORY_GIB,
        help="GiB the sweep may hold; larger sizes are skipped"
        f" (default {DEFAULT_MAX_MEMORY_GIB:g})",
    )
    p.add_argument("--degrees", default="2:12", help="degree curve, e.g. 2:12 or 4,8 (2:12)")
    p.add_argument(
        "--degree-size", type=int, default=None, help="degree curve elements (--size; quick 64K)"
    )
    p.add_argument("--degree-rounds", type=int, default=None, help="(30; --quick 5)")
    p.add_argument(
        "--isa",
        default=None,
        help="run turbogelu under this ISA (avx512bf16|avx512|avx2|neonbf16|neon|scalar)",
    )
    p.add_argument(
        "--flush",
        action="store_true",
        help="protocol: overwrite 2x the last-level cache before every batch (GPU: L2)",
    )
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help=f"append the results (JSON lines) here (default {DEFAULT_OUT}; '-': do not write)",
    )
    p.add_argument("--plots", default=None, metavar="DIR", help="write the PNG figures here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--malloc",
        choices=("steady", "default"),
        default="steady",
        help="steady (default): glibc keeps freed memory, so output allocation below 32 MiB"
        " never page-faults; default: leave glibc's moving thresholds as they are",
    )


def _error(msg: str) -> int:
    print(f"bench: {msg}", file=sys.stderr)
    return 2


def main(args) -> int:  # noqa: C901  (one flat sequence of the parts)
    import torch

    import turbogelu.ops  # noqa: F401

    device = args.device
    on_cpu = device == "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        return _error(f"--device {device}: CUDA is not available here")
    if device == "mps" and not torch.backends.mps.is_available():
        return _error("--device mps: MPS is not available here")
    if not (on_cpu or device.startswith("cuda") or device == "mps"):
        return _error(f"--device must be cpu, cuda[:N] or mps, got {device!r}")
    if args.isa is not None and args.isa not in torch.ops.turbogelu._cpu_isas():
        return _error(
            f"ISA {args.isa!r} not available here; choose from "
            f"{', '.join(torch.ops.turbogelu._cpu_isas())}"
        )
    dtypes = tuple(args.dtypes.split(",")) if args.dtypes else DTYPES_QUICK
    bad = [d for d in dtypes if d not in DTYPES_ALL]
    if bad:
        return _error(f"unsupported dtype(s) {bad}; choose from {DTYPES_ALL}")
    out_dtypes = tuple(
        d for d in args.sweep_out_dtypes.split(",") if d.strip() and d.strip() != "none"
    )
    bad = [d for d in out_dtypes if d not in DTYPES_ALL]
    if bad:
        return _error(f"unsupported --sweep-out-dtypes {bad}; choose from {DTYPES_ALL}")
    try:
        out_sizes = tuple(_int_list(args.sweep_out_sizes))
    except ValueError:
        return _error(f"--sweep-out-sizes: not a list of sizes: {args.sweep_out_sizes!r}")
    if args.alone_rounds < 1:
        return _error(f"--alone-rounds must be >= 1, got {args.alone_rounds}")
    if args.alone_repeats < 1:
        return _error(f"--alone-repeats must be >= 1, got {args.alone_repeats}")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if set(parts) - set(PARTS):
        return _error(f"unknown part(s) {sorted(set(parts) - set(PARTS))}; choose from {PARTS}")
    if args.family or args.functions:
        parts = (
            ["family"] if args.parts == DEFAULT_PARTS else list(dict.fromkeys([*parts, "family"]))
        )
    functions = tuple(args.functions.split(",")) if args.functions else bench_family.FUNCTIONS
    bad = [f for f in functions if f not in bench_family.FUNCTIONS]
    if bad:
        return _error(f"unknown function(s) {bad}; the family: {', '.join(bench_family.FUNCTIONS)}")
    try:
        family_sizes = _int_list(args.family_sizes) if args.family_sizes else None
    except ValueError:
        return _error(f"--family-sizes: not a list of sizes: {args.family_sizes!r}")
    if not (args.softcap_cap > 0 and math.isfinite(args.softcap_cap)):
        return _error(f"--softcap-cap must be positive and finite, got {args.softcap_cap}")
    if not on_cpu:
        if "family" in parts:
            print("bench: the family's benchmark runs on the CPU only; left out", file=sys.stderr)
        parts = [p for p in parts if p == "protocol"]  # the sweep, degree and family parts: CPU
    methods = args.methods.split(",") if args.methods else None
    if methods is not None:
        known = set(METHODS["forward"]) | set(METHODS["backward"])
        if set(methods) - known:
            return _error(f"unknown method(s) {sorted(set(methods) - known)}")
    if args.no_compile:
        methods = [
            m
            for m in (methods or {*METHODS["forward"], *METHODS["backward"]})
            if "compile" not in m
        ]
    directions = ("forward", "backward") if args.direction == "both" else (args.direction,)
    all_threads = torch.get_num_threads()
    quick = args.quick
    progress = not args.no_progress
    malloc = "steady" if args.malloc == "steady" and steady_malloc() else "default"
    run_id = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    skipped: list = []
    records: list[dict] = []
    t_start = time.perf_counter()

    with cpu_isa(args.isa):
        info = machine_info(device)
        if args.grain and not quick:
            return _main_grain(args, info, all_threads, malloc, run_id)
        common = {
            "run": run_id,
            "date": run_id,
            "quick": quick,
            "malloc": malloc,
            "machine": info,
            "torch": info["torch"],
            "version": info["turbogelu"],
            "git": info["git"],
            "isa": info["isa"],
        }

        def save(recs: list[dict]) -> None:
            # each part's rows as soon as it ends: an interrupted run keeps what it measured
            if args.out and args.out != "-":
                write_jsonl(args.out, bench_report.add_ratios(recs), common)
                print(f"appended {len(recs)} rows to {args.out}", file=sys.stderr)

        print(describe_machine(info))
        print(
            f"run {run_id} | malloc {malloc} | parts: {', '.join(parts)}"
            + (" | QUICK (smoke-test sizes; not for the note)" if quick else "")
        )
        if "protocol" in parts:
            rounds = args.rounds or (10 if quick else SEED_ROUNDS)
            calls = args.calls or (10 if quick else SEED_CALLS)
            threads = args.threads or 1
            flush = make_flush(device) if args.flush else None
            t0 = time.perf_counter()
            if progress:
                print(f"protocol: {rounds} rounds x {calls} calls ...", file=sys.stderr)
            recs = run_protocol(
                directions,
                dtypes,
                args.size,
                rounds,
                calls,
                device=device,
                threads=threads,
                methods=methods,
                flush=flush,
                skipped=skipped,
                progress=progress,
            )
            for r in recs:
                r["flush"] = bool(args.flush)
            t_protocol = time.perf_counter() - t0
            alone = (not quick) if args.alone_check is None else args.alone_check
            if alone:
                t1 = time.perf_counter()
                n = sum(is_baseline(r) for r in recs)
                print(
                    f"alone check: {n} baseline rows, each timed alone in"
                    f" {args.alone_repeats} fresh processes ({args.alone_rounds} rounds x"
                    f" {calls} calls) ...",
                    file=sys.stderr,
                    flush=True,
                )
                recs = check_alone(
                    recs,
                    args.size,
                    args.alone_rounds,
                    calls,
                    repeats=args.alone_repeats,
                    progress=True,  # a line per row even with --no-progress: minutes long
                    flush=bool(args.flush),
                    isa=args.isa,
                    malloc=malloc,
                )
                t_alone = time.perf_counter() - t1
            records += recs
            save(recs)
            print(
                f"\n## Protocol: {args.size} random elements + 15 edge values, {rounds} batches"
                f" x {calls} calls, {threads} thread(s), {device}"
                f"{', cache flushed before each batch' if args.flush else ''}"
                f" ({t_protocol:.0f} s)\n"
            )
            print(bench_report.protocol_table(bench_report.add_ratios(recs)))
            print()
            print(bench_report.protocol_notes(recs))
            if alone:
                print(
                    f"baseline rows timed alone in {args.alone_repeats} fresh processes"
                    f" ({args.alone_rounds} rounds x {calls} calls each, {t_alone:.0f} s):"
                    f" {bench_report.alone_summary(recs, ALONE_TOLERANCE)}"
                )
            else:
                print("baseline rows not timed alone (--no-alone-check, or --quick)")
        if "sweep" in parts:
            sizes = (
                _int_list(args.sweep_sizes)
                if args.sweep_sizes
                else ([1 << 16, 1 << 20] if quick else list(SWEEP_SIZES))
            )
            threads_list = sorted(
                {all_threads if t == "all" else int(t) for t in args.sweep_threads.split(",")}
            )
            rounds = args.sweep_rounds or (5 if quick else 20)
            calls = args.calls or (10 if quick else SEED_CALLS)
            t0 = time.perf_counter()
            if progress:
                print(f"sweep: sizes {sizes}, threads {threads_list} ...", file=sys.stderr)
            recs = run_sweep(
                sizes,
                threads_list,
                directions,
                rounds,
                calls,
                out_dtypes=out_dtypes,
                out_sizes=out_sizes,
                max_memory=args.max_memory,
                skipped=skipped,
                progress=progress,
            )
            records += recs
            save(recs)
            extra = sorted({r["dtype"] for r in recs} - {"float32"}, key=DTYPES_ALL.index)
            also = (
                f" (and {', '.join(extra)}: turbogelu and limit out= at"
                f" {', '.join(bench_report.size_label(n) for n in out_sizes if n in sizes)})"
                if extra
                else ""
            )
            print(
                f"\n## Size sweep: float32{also}, {rounds} rounds x max(1, min({calls},"
                f" {SWEEP_ELEMENTS_PER_BATCH} / size)) calls, threads {threads_list}"
                f" ({time.perf_counter() - t0:.0f} s)\n"
            )
            print(bench_report.sweep_table(bench_report.add_ratios(recs)))
        if "degree" in parts:
            size = args.degree_size or ((1 << 16) if quick else args.size)
            rounds = args.degree_rounds or (5 if quick else 30)
            calls = args.calls or (10 if quick else 20)
            degrees = _int_list(args.degrees)
            compiled = list(torch.ops.turbogelu._poly_degrees())
            if set(degrees) - set(compiled):
                return _error(f"degrees {sorted(set(degrees) - set(compiled))} not compiled")
            t0 = time.perf_counter()
            if progress:
                print(f"degree: degrees {degrees} at {size} ...", file=sys.stderr)
            recs = run_degree(size, rounds, calls, degrees=degrees, progress=progress)
            records += recs
            save(recs)
            print(
                f"\n## Operation count vs time: poly_gelu, float32, {size} elements, 1 thread,"
                f" {rounds} rounds x {calls} calls ({time.perf_counter() - t0:.0f} s); every"
                " row called below the autograd layer, as poly_gelu (which has none)\n"
            )
            print(bench_report.degree_table(bench_report.add_ratios(recs)))

        if "family" in parts:
            if family_sizes is None:
                family_sizes = list(bench_family.QUICK_SIZES if quick else bench_family.SIZES)
            if args.family_paper_size and bench_family.PAPER_HBM_SIZE not in family_sizes:
                family_sizes.append(bench_family.PAPER_HBM_SIZE)
            threads_list = sorted(
                {all_threads if t == "all" else int(t) for t in args.family_threads.split(",")}
            )
            q_rounds = bench_family.QUICK_ROUNDS
            rounds = args.family_rounds or (q_rounds if quick else bench_family.ROUNDS)
            dram_rounds = args.family_dram_rounds or (
                q_rounds if quick else bench_family.DRAM_ROUNDS
            )
            calls = args.calls or (10 if quick else SEED_CALLS)
            t0 = time.perf_counter()
            if progress:
                print(
                    f"family: {', '.join(functions)}, sizes {family_sizes}, threads"
                    f" {threads_list} ...",
                    file=sys.stderr,
                )
            recs = bench_family.run_family(
                functions,
                directions,
                dtypes,
                family_sizes,
                threads_list,
                rounds=rounds,
                dram_rounds=dram_rounds,
                calls=calls,
                cap=args.softcap_cap,
                max_memory=args.max_memory,
                skipped=skipped,
                progress=progress,
            )
            records += recs
            save(recs)
            llc, assumed = bench_family.last_level_cache()
            print(
                f"\n## Activation family: PyTorch eager vs turbogelu, {rounds} rounds"
                f" ({dram_rounds} from {bench_report.size_label(bench_family.OUT_FROM)}"
                f" elements, out=) x max(1, min({calls}, {bench_family.ELEMENTS_PER_BATCH} /"
                f" size)) calls, threads {threads_list}, softcap c ="
                f" {args.softcap_cap:g}; data: cache when a call's bytes fit in half the"
                f" last-level cache ({llc >> 20} MiB{', assumed' if assumed else ''}), else"
                f" DRAM ({time.perf_counter() - t0:.0f} s)\n"
            )
            print(bench_report.family_table(recs))
            print()
            print(bench_report.table3(recs))

    if skipped:
        print("\nSkipped:")
        for labels, reason in skipped:
            what = " ".join(
                str(labels[k])
                for k in ("bench", "direction", "dtype", "method", "size")
                if k in labels
            )
            print(f"- {what}: {reason}")
    records = bench_report.add_ratios(records)
    if records:
        from . import bench_targets

        result = bench_targets.evaluate([{**r, **common} for r in records])
        print("\n" + bench_targets.render(result))
        if args.out and args.out != "-":
            path = bench_targets.json_path(args.out)
            bench_targets.write(result, path)
            print(f"wrote {path}", file=sys.stderr)
    elapsed = time.perf_counter() - t_start
    print(f"\ntook {elapsed:.0f} s")
    if args.plots:
        rows = [{**r, **common} for r in records]
        for path in bench_report.plot_all(rows, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _main_grain(args, info: dict, all_threads: int, malloc: str, run_id: str) -> int:
    rounds = args.rounds or 50
    calls = args.calls or 20
    threads = args.threads or max(2, all_threads)
    t0 = time.perf_counter()
    rows, crossover, control = run_grain(GRAIN_SIZES, threads, rounds, calls)
    elapsed = time.perf_counter() - t0
    print(describe_machine(info))
    print(
        f"grain: float32 forward, grain 1, {rounds} rounds x max({calls},"
        f" {GRAIN_ELEMENTS_PER_BATCH} / size) calls, malloc {malloc}"
    )
    print()
    print(render_grain_table(rows, threads))
    print()
    if crossover is None:
        print(f"{threads} threads are not faster at the largest size measured.")
    else:
        print(f"{threads} threads are faster from {crossover} elements on.")
    print(
        f"(faster: median speedup >= {GRAIN_MIN_SPEEDUP} and faster in >="
        f" {100 * GRAIN_MIN_WON:.0f}% of rounds, at that size and every larger one)"
    )
    c1, cn, cs = control
    print(
        f"control, torch F.gelu at {GRAIN_SIZES[-1]} elements: 1 thread"
        f" {bench_report.fmt_us(c1)} us, {threads} threads {bench_report.fmt_us(cn)} us,"
        f" speedup {cs:.2f}"
    )
    if rows[-1]["speedup"] < 1.15 and cs > 1.3:
        print(
            f"WARNING: torch's own op runs faster on {threads} threads but turbogelu does"
            " not: is the extension built without OpenMP? (without -fopenmp,"
            " at::parallel_for runs serially, so the table says nothing about the grain)"
        )
    print(f"took {elapsed:.1f} s")
    if args.out and args.out != "-":
        common = {"bench": "grain", "dtype": "float32", "direction": "forward", "kernel": "gelu"}
        common |= {"provider": "turbogelu", "method": "turbogelu", "out_mode": "alloc"}
        common |= {"grain": 1, "run": run_id, "date": run_id, "malloc": malloc, "machine": info}
        common |= {"torch": info["torch"], "version": info["turbogelu"], "isa": info["isa"]}
        common |= {"device": "cpu", "program": cpu_program()}
        long = [
            {
                "size": r["size"],
                "threads": t,
                "p50_us": r[f"{c}_us"],
                "p5_us": r[f"{c}_p5_us"],
                "p95_us": r[f"{c}_p95_us"],
                "calls": r["calls"],
                "rounds": rounds,
            }
            for r in rows
            for t, c in ((1, "t1"), (threads, "tn"))
        ]
        write_jsonl(args.out, long, common)
    return 0
