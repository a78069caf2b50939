"""Smoke tests of the speed benchmark (``python -m experiments bench``) and of the tables and
figures drawn from its results file (``experiments.bench_report``).

They check that every row is measured, recorded and reported, never how fast anything is:
speed is not a unit-test matter (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from experiments import (
    bench,
    bench_alone,
    bench_cli,
    bench_report,
    bench_targets,
    bench_timing,
    bench_variants,
    paper,
)

ROOT = Path(__file__).resolve().parents[1]
SIZE, ROUNDS, CALLS = 4096, 3, 2


def _run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "experiments", "bench", "--no-progress", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _positive_finite(t) -> bool:
    return t is not None and math.isfinite(t) and t > 0


def test_import_does_not_import_torch():
    code = (
        "import sys, experiments.bench, experiments.bench_report, experiments.bench_cli;"
        " assert 'torch' not in sys.modules, 'torch imported';"
        " assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_time_interleaved_counts_rounds_calls_and_flushes():
    counts = {"a": 0, "b": 0, "flush": 0}

    def call(name):
        counts[name] += 1

    variants = [bench.Variant(k, lambda k=k: call(k)) for k in ("a", "b")]
    t = bench.time_interleaved(variants, rounds=4, calls=3, warmup=2, flush=lambda: call("flush"))
    assert counts == {"a": 3 + 4 * 3, "b": 3 + 4 * 3, "flush": 2 * 4}  # warm-up: max(2, 3)
    for k in ("a", "b"):
        assert len(t.wall[k]) == len(t.cpu[k]) == 4
        assert all(_positive_finite(w) for w in t.wall[k])


def test_time_interleaved_settles_each_batch_unless_flushing():
    # Each batch of n calls follows int(settle * n) untimed calls of the same variant (the
    # cache state its own calls leave); a flushed batch gets none (it is meant to start cold).
    counts = {"a": 0, "b": 0}

    def call(name):
        counts[name] += 1

    variants = [bench.Variant(k, lambda k=k: call(k)) for k in ("a", "b")]
    bench.time_interleaved(variants, rounds=2, calls=10, warmup=1)
    assert bench_timing.SETTLE_FRACTION == 0.2
    assert counts == {"a": 10 + 2 * (2 + 10), "b": 10 + 2 * (2 + 10)}
    counts.update(a=0, b=0)
    bench.time_interleaved(variants, rounds=2, calls=10, warmup=1, settle=0)
    assert counts == {"a": 30, "b": 30}
    counts.update(a=0, b=0)
    bench.time_interleaved(variants, rounds=2, calls=4, warmup=1)  # int(0.2 * 4) = 0
    assert counts == {"a": 12, "b": 12}
    with pytest.raises(ValueError, match="settle"):
        bench.time_interleaved(variants, rounds=1, calls=1, settle=1.5)


def test_clock_synchronizes_on_a_device():
    clock = bench_timing._Clock("cpu")
    wall, cpu = clock.time(lambda: sum(range(1000)), 5)
    assert wall > 0 and cpu >= 0
    if torch.cuda.is_available():
        clock = bench_timing._Clock("cuda")
        x = torch.randn(1 << 20, device="cuda")
        wall, _ = clock.time(lambda: x.mul_(1.0), 5)
        assert wall > 0


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_edge_values(dtype):
    e = bench.edge_values(dtype)
    assert e.numel() == 15 and e.dtype == getattr(torch, dtype)
    v = e.double()
    assert v[0] == 0 and not v[0].signbit() and v[1] == 0 and v[1].signbit()
    assert v[2] == math.inf and v[3] == -math.inf and v[4].isnan()
    r = v[5]
    assert v[6] == -r and v[7] > r > v[8] and v[9] == -v[7] and v[10] == -v[8]
    assert abs(r - bench.R_EXACT) < 0.02
    tiny = torch.finfo(getattr(torch, dtype)).smallest_normal
    assert 0 < v[11] < tiny and v[12] == -v[11]
    assert v[13] == torch.finfo(getattr(torch, dtype)).max and v[14] == -v[13]
    x, g = bench.make_inputs(dtype, 100, edges=True)
    assert x.numel() == g.numel() == 115
    assert torch.equal(x[100:].double().nan_to_num(7), v.nan_to_num(7))


def test_protocol_records_and_table():
    directions = ("forward", "backward")
    skipped = []
    # torch.compile's rows: in test_cli_quick (compiling six graphs here would double the time)
    methods = [
        m for m in {*bench.METHODS["forward"], *bench.METHODS["backward"]} if "compile" not in m
    ]
    recs = bench.run_protocol(
        directions, bench.DTYPES_QUICK, SIZE, ROUNDS, CALLS, skipped=skipped, methods=methods
    )
    got = {(r["direction"], r["dtype"], r["method"]) for r in recs}
    skipped_keys = {(s["direction"], s["dtype"], s["method"]) for s, _ in skipped}
    for d in directions:
        for t in bench.DTYPES_QUICK:
            for m in bench.METHODS[d]:
                if "compile" not in m:
                    assert (d, t, m) in got, (d, t, m)
    assert not skipped_keys
    default = bench.cpu_program()
    assert default in ("poly", "cells")
    programs = {"turbogelu": default, "turbogelu (poly)": "poly", "turbogelu (cells)": "cells"}
    programs["turbogelu (Estrin)"] = "poly"  # Estrin is a scheme of the polynomial
    for r in recs:
        if r["provider"] == "turbogelu":
            assert r["program"] == programs[r["method"]], r
            scheme = "estrin" if "Estrin" in r["method"] else "horner"
            assert r["scheme"] == (scheme if r["program"] == "poly" else None), r
    recs = bench_report.add_ratios(recs)
    for r in recs:
        for key in ("p50_us", "p5_us", "p95_us", "vs_turbogelu", "per_limit", "limit_us"):
            assert _positive_finite(r[key]), (r, key)
        assert r["p5_us"] <= r["p50_us"] <= r["p95_us"]
        assert r["rounds"] == ROUNDS and r["size"] == SIZE + 15 and r["threads"] == 1
        assert r["bench"] == "protocol" and r["out_mode"] == "alloc" and r["kernel"] == "gelu"
        if r["method"] == "turbogelu":
            assert r["vs_turbogelu"] == 1.0 and r["provider"] == "turbogelu"
        if r["provider"] == "limit":
            assert r["per_limit"] >= 1.0
    for d in directions:
        for t in bench.DTYPES_QUICK:
            lim = [r["per_limit"] for r in recs if (r["direction"], r["dtype"]) == (d, t)]
            assert min(lim) <= 1.0 + 1e-12
    table = bench_report.protocol_table(recs)
    lines = table.splitlines()
    assert lines[0].startswith("| direction | dtype | method | median us/op | p5 | p95 |")
    assert "speedup vs turbo" in lines[0]
    assert len(lines) == 2 + len(recs)
    assert any(
        line.startswith("| forward | float32 | turbogelu | ") and "| - |" in line for line in lines
    )
    assert "speedup vs turbo" in bench_report.protocol_notes(recs)


@pytest.mark.parametrize("program", ["poly", "cells"])
def test_the_turbogelu_row_is_the_default_program(program):
    # Whatever the build's default, the row named "turbogelu" records the program the switch
    # holds (and runs it: its context leaves the switch alone); the forced rows keep theirs.
    tg = torch.ops.turbogelu
    previous = tg._set_cpu_kernel(program)
    try:
        variants = bench.make_variants(
            "forward", "float32", SIZE, methods=["turbogelu", "turbogelu (poly)"]
        )
        by = {v.labels["method"]: v for v in variants}
        assert by["turbogelu"].labels["program"] == program
        assert by["turbogelu (poly)"].labels["program"] == "poly"
        tg._set_cpu_kernel("cells" if program == "poly" else "poly")
        with by["turbogelu (poly)"].context():
            assert tg._cpu_kernel() == "poly"
    finally:
        assert tg._set_cpu_kernel(previous) in ("poly", "cells")
    assert bench.cpu_program() == tg._cpu_kernel()  # restored: the setting's program again


@pytest.mark.parametrize(
    "direction, limit",
    [
        ("forward", "limit: copy"),
        ("forward", "limit: stream copy"),
        ("backward", "limit: mul"),
        ("backward", "limit: stream read2"),
    ],
)
def test_limit_rows_write_into_one_preallocated_output(direction, limit):
    # An output allocated in the timed region landed in one of two heap blocks in turn in some
    # processes and not in others, which moved a cache-resident copy by 2x between the
    # interleaved protocol and its alone timings; the limit rows now reuse one buffer.
    x, g = bench.make_inputs("float32", SIZE, edges=True)
    (v,) = bench.make_variants(direction, "float32", SIZE, methods=[limit])
    first, second = v.fn(), v.fn()
    assert first.data_ptr() == second.data_ptr()
    if limit == "limit: stream read2":  # the bytes of g XOR x
        assert torch.equal(second.view(torch.int32), g.view(torch.int32) ^ x.view(torch.int32))
    else:
        want = x if direction == "forward" else g * x
        torch.testing.assert_close(second, want, rtol=0, atol=0, equal_nan=True)
    assert v.labels["preallocated_output"] is True
    assert v.labels["out_mode"] == "alloc"  # grouped with the protocol's rows for ratios
    (t,) = bench.make_variants(direction, "float32", SIZE, methods=["turbogelu"])
    assert "preallocated_output" not in t.labels  # the ops under test allocate, as users call them


def test_make_variants_rejects_unknown_direction_and_method():
    with pytest.raises(ValueError):
        bench.make_variants("sideways", "float32", SIZE)
    with pytest.raises(ValueError):
        bench.make_variants("forward", "float32", SIZE, methods=["limit: mul"])


def test_flag_baseline_within_and_beyond_the_tolerance():
    row = {"method": "torch exact", "provider": "torch", "p50_us": 110.0}
    assert not bench.flag_baseline(row, 100.1)["baseline_suspect"]  # 9.9% off: within
    assert bench.flag_baseline(row, 99.9)["baseline_suspect"]  # 10.1% off: beyond
    assert not bench.flag_baseline(row, 105.0)["baseline_suspect"]
    inflated = bench.flag_baseline(row, 90.0)  # 22% slower interleaved
    assert inflated["baseline_suspect"] and inflated["alone_p50_us"] == 90.0
    assert inflated["alone_ratio"] == pytest.approx(110 / 90)
    assert bench.flag_baseline(row, 125.0)["baseline_suspect"]  # faster interleaved: also
    assert not bench.flag_baseline(row, 125.0, tolerance=0.2)["baseline_suspect"]
    assert "alone_p50_us" not in row  # a copy
    with pytest.raises(ValueError, match="positive"):
        bench.flag_baseline(row, 0.0)
    with pytest.raises(ValueError, match="positive"):
        bench.flag_baseline(row, [])


def test_flag_baseline_against_the_range_of_several_alone_timings():
    # the machine's own spread (80-95 us alone) widens what counts as the same call...
    row = {"method": "limit: copy", "provider": "limit", "p50_us": 104.0}
    within = bench.flag_baseline(row, [80.0, 95.0, 90.0])
    assert not within["baseline_suspect"]  # 104 <= 1.1 x 95
    assert within["alone_p50_us"] == 90.0 and within["alone_p50s_us"] == [80.0, 95.0, 90.0]
    assert within["alone_spread"] == pytest.approx(95 / 80 - 1)
    assert within["alone_ratio"] == pytest.approx(104 / 90)
    assert bench.flag_baseline(row | {"p50_us": 104.6}, [80.0, 95.0])["baseline_suspect"]
    assert not bench.flag_baseline(row | {"p50_us": 72.8}, [80.0, 95.0])["baseline_suspect"]
    assert bench.flag_baseline(row | {"p50_us": 72.7}, [80.0, 95.0])["baseline_suspect"]
    # ...but a 3x inflation (the reference's 2377 us against 780-860 alone) stays far outside
    gelu_bwd = {"method": "torch exact", "provider": "torch", "p50_us": 2377.0}
    assert bench.flag_baseline(gelu_bwd, [780.0, 860.0, 822.0])["baseline_suspect"]


def test_check_alone_flags_only_baseline_rows(monkeypatch):
    rows = [
        {"direction": "backward", "dtype": "bfloat16", "method": m, "provider": p, "p50_us": t}
        for m, p, t in (
            ("turbogelu", "turbogelu", 300.0),
            ("torch exact", "torch", 2377.0),  # the committed reference's inflated row
            ("torch.compile exact", "torch.compile", 1345.0),
            ("limit: mul", "limit", 184.0),
            ("limit: stream read2", "limit", 81.0),
        )
    ]
    # per fresh process: each method's alone median (None: that row failed there)
    alone = [
        {"torch exact": 800.0, "torch.compile exact": 1300.0, "limit: mul": 150.0},
        {"torch exact": 820.0, "torch.compile exact": None, "limit: mul": 170.0},
        {"torch exact": 790.0, "torch.compile exact": 1310.0, "limit: mul": 160.0},
    ]
    batches = []

    def fake_run_alone_batch(specs, timeout=None):
        times = alone[len(batches)]
        batches.append([s["method"] for s in specs])
        assert len({json.dumps(s, sort_keys=True) for s in specs}) == len(specs)
        return [
            {"p50_us": times[s["method"]], "rounds": s["rounds"]}
            if times.get(s["method"])
            else {"error": "exit 1: boom"}
            for s in specs
        ]

    monkeypatch.setattr(bench_alone, "run_alone_batch", fake_run_alone_batch)
    out = bench.check_alone(rows, 1 << 20, 7, 100, isa="avx2", flush=True)
    by = {r["method"]: r for r in out}
    baselines = [r["method"] for r in rows[1:]]
    assert batches == [baselines, baselines[::-1], baselines]  # three processes, order swapped
    assert "alone_p50_us" not in by["turbogelu"] and "baseline_suspect" not in by["turbogelu"]
    assert by["torch exact"]["baseline_suspect"] is True
    assert by["torch exact"]["alone_p50s_us"] == [800.0, 820.0, 790.0]
    assert by["torch.compile exact"]["baseline_suspect"] is False
    assert by["torch.compile exact"]["alone_p50s_us"] == [1300.0, 1310.0]  # the failed one left out
    assert by["limit: mul"]["baseline_suspect"] is False  # 184 <= 1.1 x 170
    assert by["limit: mul"]["alone_rounds"] == 7
    assert by["limit: stream read2"]["alone_error"] == "exit 1: boom"
    assert "baseline_suspect" not in by["limit: stream read2"]
    summary = bench_report.alone_summary(out)
    assert "3 checked (alone timings of one row up to 13% apart)" in summary
    assert "torch exact 2377 us interleaved vs 790.0-820.0 us alone" in summary
    assert "check failed for: backward bfloat16 limit: stream read2" in summary
    with pytest.raises(ValueError, match="repeats"):
        bench.check_alone(rows, 1 << 20, repeats=0)


def test_run_alone_batch_times_each_row_in_one_fresh_process():
    # the child's real side: one process, two rows, one of them unknown (the other still timed)
    recs = bench.run_protocol(("forward",), ("float32",), SIZE, 2, CALLS, methods=["limit: copy"])
    spec = bench.alone_spec(recs[0], SIZE, 2, CALLS)
    good, bad = bench_alone.run_alone_batch([spec, spec | {"method": "no such method"}])
    assert _positive_finite(good["p50_us"]) and good["rounds"] == 2
    assert "unknown method" in bad["error"]
    assert bench_alone.run_alone_batch([]) == []
    (late,) = bench_alone.run_alone_batch([spec], timeout=0.01)  # killed before it printed
    assert late == {"error": "timed out after 0 s"}


def test_time_alone_and_its_errors(capsys):
    # the child's side, in this process (the subprocess itself: test_cli_alone_check)
    recs = bench.run_protocol(("forward",), ("float32",), SIZE, 2, CALLS, methods=["limit: copy"])
    spec = bench.alone_spec(recs[0], SIZE, 2, CALLS)
    assert spec["size"] == SIZE and spec["method"] == "limit: copy" and spec["threads"] == 1
    res = bench.time_alone(spec)
    assert _positive_finite(res["p50_us"]) and res["rounds"] == 2 and res["calls"] == CALLS
    assert bench_alone._alone_main(json.dumps([spec | {"method": "no such method"}])) == 0
    assert "unknown method" in json.loads(capsys.readouterr().out.splitlines()[-1])["error"]


def test_sweep_rows_and_memory_skip():
    skipped = []
    recs = bench.run_sweep(
        (4096, 8192, 1 << 40), (1, 2), ("forward", "backward"), ROUNDS, CALLS, skipped=skipped
    )
    assert [s["size"] for s, _ in skipped] == [1 << 40] and "GiB" in skipped[0][1]
    modes = {(r["direction"], r["method"], r["out_mode"]) for r in recs}
    assert ("forward", "turbogelu", "inplace") in modes
    assert ("backward", "torch exact", "out") in modes
    assert {r["size"] for r in recs} == {4096, 8192} and {r["threads"] for r in recs} == {1, 2}
    recs = bench_report.add_ratios(recs)
    assert all(_positive_finite(r["per_limit"]) for r in recs)
    table = bench_report.sweep_table(recs)
    assert "| forward | 4K | float32 | 1 | inplace |" in table
    assert "| backward | 8K | float32 | 2 | out |" in table


def test_sweep_adds_16bit_out_rows_at_the_dram_sizes():
    skipped = []
    recs = bench.run_sweep(
        (4096, 8192), (1,), ("forward", "backward"), ROUNDS, CALLS,
        out_dtypes=("float16", "bfloat16"), out_sizes=(8192,), skipped=skipped,
    )  # fmt: skip
    assert not skipped
    wide = {(r["dtype"], r["size"], r["direction"], r["method"], r["out_mode"]) for r in recs}
    for dt in ("float16", "bfloat16"):
        assert {w[1:] for w in wide if w[0] == dt} == {
            (8192, "forward", "turbogelu", "out"),
            (8192, "forward", "limit: copy", "out"),
            (8192, "forward", "limit: stream copy", "out"),
            (8192, "backward", "turbogelu", "out"),
            (8192, "backward", "limit: mul", "out"),
            (8192, "backward", "limit: stream read2", "out"),
        }
    recs = bench_report.add_ratios(recs)
    for r in recs:
        if r["dtype"] != "float32":
            assert _positive_finite(r["per_limit"])  # against its own dtype's limit row
        if r["method"] == "turbogelu":
            assert r["program"] == bench.cpu_program()
    table = bench_report.sweep_table(recs)
    assert "| forward | 8K | bfloat16 | 1 | out |" in table
    assert "| backward | 8K | float16 | 1 | out |" in table and "| 4K | float16 |" not in table
    # the 16-bit rows are left out when only float32 fits, and the output says so
    f32 = bench.sweep_bytes(8192)
    budget_gib = (f32 + bench.sweep_bytes(8192, 2, only_out=True)) / (1 << 30)
    skipped = []
    recs = bench.run_sweep(
        (8192,), (1,), ("forward",), 2, 1, out_dtypes=("float16", "bfloat16"),
        out_sizes=(8192,), max_memory=budget_gib, skipped=skipped,
    )  # fmt: skip
    assert {r["dtype"] for r in recs} == {"float32", "float16"}
    assert [(s["dtype"], s["size"]) for s, _ in skipped] == [("bfloat16", 8192)]


def test_inplace_refills_the_buffer_before_each_batch():
    x, g = bench.make_inputs("float32", 4096)
    out = torch.empty_like(x)
    variants = bench.sweep_variants("forward", 4096, 1, inputs=(x, g, out))
    (v,) = [v for v in variants if v.labels["out_mode"] == "inplace"]
    assert v.calls <= bench.INPLACE_MAX_CALLS
    for _ in range(2):
        with v.context():
            v.fn()
        assert torch.equal(out, torch.ops.turbogelu.gelu(x))


def test_degree_rows():
    recs = bench_report.add_ratios(bench.run_degree(SIZE, ROUNDS, CALLS, degrees=(2, 8, 12)))
    poly = [r for r in recs if r["method"].startswith("poly_gelu")]
    assert {(r["direction"], r["degree"], r["scheme"]) for r in poly} == {
        (d, g, s) for d in ("forward", "backward") for g in (2, 8, 12) for s in ("horner", "estrin")
    }
    for r in poly:
        assert _positive_finite(r["p50_us"]) and _positive_finite(r["per_limit"])
        assert r["op_count"] > r["degree"] and r["max_abs_error"] > 0
    fwd = {
        r["degree"]: r["op_count"]
        for r in poly
        if r["direction"] == "forward" and r["scheme"] == "horner"
    }
    assert fwd[2] < fwd[8] < fwd[12]
    # the shipped op beside them: its polynomial, called the same way (below autograd)
    shipped = {(r["direction"], r["method"]): r for r in recs if r["method"].startswith("turbo")}
    for d in ("forward", "backward"):
        r = shipped[(d, "turbogelu (poly)")]
        assert r["program"] == "poly" and r["degree"] == 8 and r["autograd"] is False
        assert ((d, "turbogelu") in shipped) == (bench.cpu_program() != "poly")
    assert all(r["autograd"] is False for r in recs)
    table = bench_report.degree_table(recs)
    assert "| forward | 12 |" in table
    assert "| forward | shipped op, poly program (degree 8, Horner) |" in table


def test_degree_part_times_the_default_program_where_it_is_not_the_polynomial():
    tg = torch.ops.turbogelu
    previous = tg._set_cpu_kernel("cells")
    try:
        variants = bench.degree_variants(SIZE, degrees=(8,))
    finally:
        tg._set_cpu_kernel(previous)
    by = {v.labels["method"]: v for v in variants if v.labels["direction"] == "forward"}
    assert by["turbogelu"].labels["program"] == "cells"
    assert by["turbogelu"].labels["degree"] is None
    with by["turbogelu"].context():
        assert tg._cpu_kernel() == "cells"
        assert not tg.gelu(torch.ones(4, requires_grad=True)).requires_grad  # below autograd
    with by["turbogelu (poly)"].context():
        assert tg._cpu_kernel() == "poly"


def _proto(direction, dtype, times, size=bench_targets.PROTOCOL_SIZE, **extra):
    """Synthetic protocol rows of one group: method -> p50 (us)."""
    return [
        {
            "bench": "protocol", "direction": direction, "dtype": dtype, "method": m,
            "provider": bench_variants._provider(m), "p50_us": t, "size": size, "threads": 1,
            "device": "cpu", "rounds": 50, "run": "r", **extra.get(m, {}),
        }
        for m, t in times.items()
    ]  # fmt: skip


def _dram(direction, dtype, threads, tg, lim, rounds=20):
    limit = "limit: copy" if direction == "forward" else "limit: mul"
    return [
        {
            "bench": "sweep", "direction": direction, "dtype": dtype, "method": m,
            "provider": bench_variants._provider(m), "p50_us": t, "size": 1 << 26,
            "threads": threads, "out_mode": "out", "rounds": rounds, "run": "r",
            "program": "cells",
        }
        for m, t in (("turbogelu", tg), (limit, lim))
    ]  # fmt: skip


def test_targets_which_bound_applies_and_whether_it_is_met():
    cells = {"turbogelu": {"program": "cells"}}
    rows = [
        # compute-bound (cache-resident): PyTorch / S is the larger bound; 250 <= 488/1.8=271
        *_proto("forward", "float32", {"turbogelu": 250, "torch exact": 488,
                                       "limit: copy": 103, "limit: stream copy": 157}, **cells),
        # memory-bound: L x the streaming copy (1.3 x 176 = 229) beats 460 / 2.5 = 184; 230 > 229
        *_proto("forward", "bfloat16", {"turbogelu": 230, "torch exact": 460,
                                        "limit: copy": 330, "limit: stream copy": 176}, **cells),
        # a suspect baseline: met, but on an inflated PyTorch row
        *_proto("backward", "bfloat16", {"turbogelu": 310, "torch exact": 2377, "limit: mul": 184},
                **{"torch exact": {"baseline_suspect": True, "alone_p50_us": 800}}),
        # no PyTorch row: not evaluated, said so
        *_proto("backward", "float32", {"turbogelu": 283, "limit: mul": 165}),
        *_proto("forward", "float64", {"turbogelu": 500, "torch exact": 900, "limit: copy": 200}),
    ]  # fmt: skip
    res = bench_targets.evaluate(rows)
    t = {(x["direction"], x["dtype"]): x for x in res["protocol"]}
    assert set(t) == {("forward", "float32"), ("forward", "bfloat16"), ("backward", "bfloat16")}
    f32 = t[("forward", "float32")]
    assert f32["applies"] == "PyTorch/S" and f32["met"] and f32["program"] == "cells"
    assert f32["torch_bound_us"] == pytest.approx(488 / 1.8)
    assert f32["limit_bound_us"] == pytest.approx(1.10 * 103) and f32["limit_row"] == "limit: copy"
    assert f32["ratio"] == pytest.approx(250 / (488 / 1.8))
    bf = t[("forward", "bfloat16")]
    assert bf["applies"] == "L x limit: stream copy" and not bf["met"]
    assert bf["bound_us"] == pytest.approx(1.30 * 176)
    sus = t[("backward", "bfloat16")]
    assert sus["met"] and sus["suspect_baselines"] == ["torch exact"] and sus["program"] is None
    missing = "\n".join(res["missing"])
    assert "backward float32: not evaluated, missing row(s): torch exact" in missing
    assert "forward float16: no one-thread protocol rows" in missing
    assert "float64: no target defined" in missing and "DRAM: no sweep rows" in missing
    assert res["all_met"] is False and res["sound"] is False
    assert res["baselines"]["suspects"][0]["alone_p50_us"] == 800
    text = bench_targets.render(res)
    assert (
        "| forward | float32 | cells | 250 | 271 | 113 | PyTorch/S (S = 1.8) | 0.92 | yes |" in text
    )
    assert "L x limit: stream copy (L = 1.30) | 1.01 | **no** |" in text
    assert "yes (suspect baseline: torch exact)" in text and "| not recorded |" in text
    assert "2377 us interleaved, 800 us alone" in text and "Verdict: NOT every target met" in text


def test_targets_dram_rows():
    rows = []
    for d in ("forward", "backward"):
        for dt in ("float32", "float16", "bfloat16"):
            rows += _dram(d, dt, 1, 100.0, 100.0)  # at the limit: met
            rows += _dram(d, dt, 2, 104.0, 100.0)  # 4% over: not met
    rows[-1]["rounds"] = rows[-2]["rounds"] = 10
    rows += _dram("forward", "float32", 1, 1.0, 1.0)[:1]  # a stray row of another size
    rows[-1]["size"] = 1 << 20
    res = bench_targets.evaluate(rows)
    by = {(x["direction"], x["dtype"], x["threads"]): x for x in res["dram"]}
    assert len(by) == 12 and all(by[k]["met"] == (k[2] == 1) for k in by)
    assert by[("backward", "bfloat16", 2)]["enough_rounds"] is False
    assert by[("forward", "float16", 1)]["limit_row"] == "limit: copy"
    assert by[("forward", "float16", 1)]["bound_us"] == pytest.approx(103.0)
    assert all("protocol" in m for m in res["missing"])  # no protocol rows: each said
    text = bench_targets.render(res)
    assert (
        "| backward | bfloat16 | 2 | cells | 104 | limit: mul | 103 | 1.01 | **no** (only 10"
        in text
    )
    # the 16-bit rows missing: each named
    only32 = [r for r in rows if r["dtype"] == "float32"]
    missing = bench_targets.evaluate(only32)["missing"]
    assert "DRAM forward float16 1 thread(s): no 64M out= rows (--sweep-out-dtypes)" in missing


def test_targets_json_cli_and_paper_table(tmp_path):
    rows = _proto("forward", "float32", {"turbogelu": 250, "torch exact": 488, "limit: copy": 103})
    res = bench_targets.evaluate(rows)
    path = bench_targets.write(res, bench_targets.json_path(tmp_path / "bench.jsonl"))
    assert path == tmp_path / "bench_targets.json"
    assert json.loads(path.read_text())["protocol"][0]["met"] is True
    table = paper.TABLES["bench_targets"](paper._Results(tmp_path))
    assert "| forward | float32 | not recorded | 250 |" in table and "## Targets" not in table
    # a results folder of an older benchmark: the table from its bench.jsonl, else an error
    older = tmp_path / "older"
    older.mkdir()
    with pytest.raises(paper.Missing, match="bench_targets.json"):
        paper.TABLES["bench_targets"](paper._Results(older))
    bench.write_jsonl(older / "bench.jsonl", rows, {})
    assert "| forward | float32 | not recorded | 250 |" in paper.TABLES["bench_targets"](
        paper._Results(older)
    )
    bench.write_jsonl(tmp_path / "b.jsonl", rows, {})
    r = subprocess.run(
        [sys.executable, "-m", "experiments.bench_targets", str(tmp_path / "b.jsonl")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0 and "| forward | float32 |" in r.stdout, r.stderr
    assert bench_targets.main([str(tmp_path / "none.jsonl")]) == 2


def test_older_results_files_stay_readable(tmp_path):
    # the first reference's rows (tests/fixtures/README.md) predate the program label, the
    # poly row and the alone check
    ref = ROOT / "tests" / "fixtures" / "bench_before_programs.jsonl"
    rows = bench_report.load(ref)
    assert rows and not any("program" in r for r in rows)
    assert "| backward | bfloat16 | torch exact |" in bench_report.protocol_table(rows)
    assert "shipped op (degree 8, Horner; with autograd dispatch)" in bench_report.degree_table(
        rows
    )
    assert "| forward | 64M | float32 | 1 | out |" in bench_report.sweep_table(rows)
    res = bench_targets.evaluate(bench_report.add_ratios(rows))
    assert len(res["protocol"]) == 6 and {t["program"] for t in res["protocol"]} == {None}
    assert len(res["dram"]) == 4  # float32 only, 1 and 2 threads
    assert res["baselines"]["checked"] == 0
    assert "not checked" in bench_targets.render(res)
    names = [p.name for p in bench_report.plot_all(rows, tmp_path)]
    assert "degrees.png" in names and "bars_forward.png" in names


def _overlaps(boxes) -> list:
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a.overlaps(b)]


def test_bar_legend_covers_no_bar():
    rows = []
    for dt in ("float32", "float16", "bfloat16"):
        rows += _proto("forward", dt, {m: 100.0 + 10 * i for i, m in
                                       enumerate(bench.METHODS["forward"])})  # fmt: skip
    for r in rows:
        r["p5_us"], r["p95_us"] = 0.9 * r["p50_us"], 1.1 * r["p50_us"]
    fig = bench_report.plot_bars(rows, "forward")
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent(renderer)
    bars = [p.get_window_extent(renderer) for p in ax.patches]
    assert len(bars) == 3 * len(bench.METHODS["forward"])
    assert not [b for b in bars if legend.overlaps(b)]


def test_degree_plot_labels_do_not_overlap():
    # Horner's degree d and Estrin's degree d - 1 have the same operation count here, at the
    # same time or just above (where the curves cross): the labels used to print on top of
    # each other.
    rows = []
    for d in range(2, 13):
        for scheme, ops in (("horner", d + 4), ("estrin", d + 5)):
            lift = 0.3 * (d % 2) if scheme == "estrin" else 0.0
            rows.append({
                "bench": "degree", "direction": "forward", "dtype": "float32", "size": 65536,
                "threads": 1, "method": f"poly_gelu degree {d}", "provider": "turbogelu",
                "scheme": scheme, "degree": d, "op_count": ops, "p50_us": 10.0 + ops + lift,
                "run": "r",
            })  # fmt: skip
    fig = bench_report.plot_degrees(rows)
    renderer = fig.canvas.get_renderer()
    labels = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(labels) == 22 and not _overlaps(labels)


def test_grain_rows():
    sizes = (4096, 16384)
    rows, crossover, control = bench.run_grain(sizes, threads=2, rounds=ROUNDS, calls=CALLS)
    assert all(_positive_finite(c) for c in control)
    assert [r["size"] for r in rows] == list(sizes)
    for r in rows:
        assert all(_positive_finite(r[k]) for k in ("t1_us", "tn_us", "speedup"))
    assert crossover is None or crossover in sizes
    table = bench.render_grain_table(rows, 2)
    assert all(f"| {s} |" in table for s in sizes)


def test_machine_info():
    info = bench.machine_info()
    assert info["isa"] in info["isas"]
    assert info["threads"] >= 1
    assert "oneDNN" in bench.describe_machine(info)


def test_load_picks_the_last_run_and_plots(tmp_path):
    path = tmp_path / "r.jsonl"
    recs = bench.run_protocol(
        ("forward",), ("float32",), SIZE, 2, 1, methods=["turbogelu", "limit: copy"]
    )
    bench.write_jsonl(path, recs, {"run": "a"})
    bench.write_jsonl(path, recs, {"run": "b"})
    assert len(bench_report.load(path, run=None)) == 2 * len(recs)
    assert {r["run"] for r in bench_report.load(path)} == {"b"}
    files = bench.plot_all(path, tmp_path / "fig")
    assert [f.name for f in files] == ["bars_forward.png"]
    assert files[0].stat().st_size > 1000


def test_seed_tables_and_speedups(tmp_path):
    seed = bench_report.load_seed_tables()
    machines = list(dict.fromkeys(r["machine"] for r in seed))
    assert len(machines) >= 2 and "TurboGeLU write-up" in bench_report.seed_source()
    for r in seed:
        assert _positive_finite(r["median_us"]) and r["p5_us"] <= r["median_us"] <= r["p95_us"]
        assert (r["speedup_vs_turbo"] is None) == (r["method"] == "turbogelu")
    sp = bench_report.seed_speedups(seed)
    assert set(sp[(machines[0], "forward", "float32")]) == {"vs_torch_exact", "vs_torch_approx"}
    assert bench_report.slug("Apple M1 Pro GPU (Metal)") == "apple_m1_pro_gpu_metal"
    n_first = sum(r["machine"] == machines[0] for r in seed)
    assert len(bench_report.seed_table(seed, machines[0]).splitlines()) == 2 + n_first
    recs = bench.run_protocol(
        ("forward",),
        ("float32",),
        SIZE,
        2,
        1,
        methods=["torch exact", "torch approx", "turbogelu", "limit: copy"],
    )
    (ratio,) = bench_report.summary_ratios(recs)
    assert _positive_finite(ratio["turbogelu_p50_us"]) and _positive_finite(ratio["vs_torch_exact"])
    assert "| forward | float32 |" in bench_report.ratio_table(recs)
    table = bench_report.speedup_table(recs, seed)
    assert all(m in table for m in machines) and "| backward | float32 |" in table
    out = tmp_path / "speedups.png"
    bench_report.plot_speedups({"here": recs}, seed, out)
    assert out.stat().st_size > 1000


def test_cli_quick(tmp_path):
    out, plots = tmp_path / "bench.jsonl", tmp_path / "plots"
    r = _run_cli(
        "--quick", "--size", str(SIZE), "--rounds", str(ROUNDS), "--calls", str(CALLS),
        "--sweep-sizes", "4K,8K", "--sweep-rounds", "2", "--degrees", "2,8",
        "--degree-size", str(SIZE), "--degree-rounds", "2", "--out", str(out),
        "--plots", str(plots),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "| forward | float32 | turbogelu |" in r.stdout
    assert "| backward | bfloat16 | limit: mul |" in r.stdout
    assert "## Size sweep" in r.stdout and "## Operation count vs time" in r.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {rec["bench"] for rec in records} == {"protocol", "sweep", "degree"}
    compiled = {rec["method"] for rec in records} & {"torch.compile exact"}
    assert compiled or "torch.compile failed" in r.stdout  # a row, or the reason it is missing
    assert len({rec["run"] for rec in records}) == 1
    for rec in records:
        assert _positive_finite(rec["p50_us"]) and rec["machine"]["isa"] == rec["isa"]
        for key in ("kernel", "provider", "direction", "dtype", "size", "threads", "out_mode"):
            assert key in rec, key
    assert "## Targets" in r.stdout and "A QUICK run" in r.stdout
    assert "baseline rows not timed alone" in r.stdout  # quick: the alone check is off
    targets = json.loads((tmp_path / "bench_targets.json").read_text())
    assert len(targets["protocol"]) == 6 and targets["quick"] is True
    assert all(t["program"] == bench.cpu_program() for t in targets["protocol"])
    names = sorted(p.name for p in plots.iterdir())
    assert names == sorted(
        [
            "bars_forward.png",
            "bars_backward.png",
            "sweep_forward.png",
            "sweep_backward.png",
            "degrees.png",
        ]
    )


def test_cli_alone_check(tmp_path):
    out = tmp_path / "bench.jsonl"
    r = _run_cli(
        "--quick", "--parts", "protocol", "--direction", "forward", "--dtypes", "float32",
        "--methods", "turbogelu,limit: copy", "--size", str(SIZE), "--rounds", str(ROUNDS),
        "--calls", str(CALLS), "--alone-check", "--alone-rounds", "2", "--alone-repeats", "2",
        "--out", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "baseline rows timed alone in 2 fresh processes (2 rounds" in r.stdout
    rows = {rec["method"]: rec for rec in map(json.loads, out.read_text().splitlines())}
    assert _positive_finite(rows["limit: copy"]["alone_p50_us"])
    assert "baseline_suspect" in rows["limit: copy"] and "alone_p50_us" not in rows["turbogelu"]
    assert len(rows["limit: copy"]["alone_p50s_us"]) == 2


def _main(*argv: str) -> int:
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    return bench_cli.main(p.parse_args(["--no-progress", "--out", "-", *argv]))


def test_cli_errors(capsys):
    assert _main("--parts", "protocol", "--isa", "no-such-isa") == 2
    assert "not available" in capsys.readouterr().err
    assert _main("--parts", "nothing") == 2
    assert "unknown part" in capsys.readouterr().err
    assert _main("--dtypes", "int8") == 2
    assert "unsupported dtype" in capsys.readouterr().err
    assert _main("--device", "tpu") == 2
    capsys.readouterr()
    assert _main("--sweep-out-dtypes", "int4") == 2
    assert "--sweep-out-dtypes" in capsys.readouterr().err
    assert _main("--alone-rounds", "0") == 2
    assert "--alone-rounds" in capsys.readouterr().err
    assert _main("--alone-repeats", "0") == 2
    assert "--alone-repeats" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert _main("--device", "cuda") == 2
        assert "CUDA is not available" in capsys.readouterr().err


def test_add_arguments_defaults():
    p = argparse.ArgumentParser()
    bench_cli.add_arguments(p)
    args = p.parse_args([])
    assert args.size == 1 << 20 and args.direction == "both" and args.device == "cpu"
    assert args.out == "results/bench.jsonl" and args.parts == "protocol,sweep,degree"
    assert bench_cli._int_list("64K,1M,2:4") == [65536, 1 << 20, 2, 3, 4]


def test_alone_repeat_sets_interleaved_and_two_alone_timings_side_by_side(monkeypatch):
    # Two fresh-process timings of each baseline row: the spread between them is the scale
    # that the baseline_suspect flag (interleaved vs alone) is to be read against.
    from experiments import alone_repeat

    alone = iter([100.0, 125.0, 200.0, 196.0])
    monkeypatch.setattr(alone_repeat, "run_alone", lambda spec: {"p50_us": next(alone)})
    rows = [
        {"direction": "forward", "dtype": "float32", "method": m, "size": 1048591, "p50_us": t}
        for m, t in (("limit: copy", 100.0), ("torch exact", 260.0))
    ]
    got = alone_repeat.measure(rows, rounds=2, calls=3, progress=lambda s: None)
    assert [r["alone_b_over_alone_a"] for r in got] == [1.25, 0.98]
    s = alone_repeat.summary(got, tolerance=0.1)
    assert s["alone_vs_alone"]["off_by_more_than_tolerance"] == 1
    assert s["interleaved_vs_alone"]["off_by_more_than_tolerance"] == 1  # 260 / 200
    assert s["interleaved_vs_alone"]["slower_than_alone_a"] == 1


def test_softmax_sweep_times_every_shape_and_writes_them(tmp_path, monkeypatch, capsys):
    """experiments.softmax_time --sweep: a row per shape and dtype, written with the machine
    and the command (the README's softmax figures come from such a file); bad flags refused."""
    from experiments import softmax_time

    monkeypatch.setattr(softmax_time, "SWEEP", [((4, 33), -1), ((3, 5, 2), 1)])
    out = tmp_path / "sweep.json"
    argv = ["softmax_time", "--sweep", "--rounds", "1", "--calls", "1", "--json", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    threads = torch.get_num_threads()
    try:
        softmax_time.main()  # times on one thread, as the README's figures
    finally:
        torch.set_num_threads(threads)
    data = json.loads(out.read_text())
    assert [(r["shape"], r["dim"], r["dtype"]) for r in data["rows"]] == [
        ([4, 33], -1, "float32"),
        ([4, 33], -1, "bfloat16"),
        ([3, 5, 2], 1, "float32"),
        ([3, 5, 2], 1, "bfloat16"),
    ]
    for r in data["rows"]:
        assert r["torch_us"] > 0 and r["turbogelu_us"] > 0
        assert r["ratio"] == pytest.approx(r["turbogelu_us"] / r["torch_us"])
    assert data["meta"]["command"].startswith("python -m experiments.softmax_time --sweep")
    assert data["meta"]["isa"] and data["meta"]["torch"] == torch.__version__
    assert "slowest against torch" in capsys.readouterr().out
    for bad in (["--json", str(out)], ["--sweep", "--rounds", "0"]):
        monkeypatch.setattr(sys, "argv", ["softmax_time", *bad])
        with pytest.raises(SystemExit):
            softmax_time.main()
