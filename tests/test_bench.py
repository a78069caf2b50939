"""Smoke tests of the speed benchmark (``python -m turbogelu bench``) and of the tables and
figures drawn from its results file (``turbogelu.bench_report``).

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

from turbogelu import bench, bench_report

ROOT = Path(__file__).resolve().parents[1]
SIZE, ROUNDS, CALLS = 4096, 3, 2


def _run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "turbogelu", "bench", "--no-progress", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _positive_finite(t) -> bool:
    return t is not None and math.isfinite(t) and t > 0


def test_import_does_not_import_torch():
    code = (
        "import sys, turbogelu.bench, turbogelu.bench_report;"
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


def test_clock_synchronizes_on_a_device():
    clock = bench._Clock("cpu")
    wall, cpu = clock.time(lambda: sum(range(1000)), 5)
    assert wall > 0 and cpu >= 0
    if torch.cuda.is_available():
        clock = bench._Clock("cuda")
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


def test_make_variants_rejects_unknown_direction_and_method():
    with pytest.raises(ValueError):
        bench.make_variants("sideways", "float32", SIZE)
    with pytest.raises(ValueError):
        bench.make_variants("forward", "float32", SIZE, methods=["limit: mul"])


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
    assert "| forward | 4K | 1 | inplace |" in table and "| backward | 8K | 2 | out |" in table


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
    assert "| forward | 12 |" in bench_report.degree_table(recs)


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


def _main(*argv: str) -> int:
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    return bench.main(p.parse_args(["--no-progress", "--out", "-", *argv]))


def test_cli_errors(capsys):
    assert _main("--parts", "protocol", "--isa", "no-such-isa") == 2
    assert "not available" in capsys.readouterr().err
    assert _main("--parts", "nothing") == 2
    assert "unknown part" in capsys.readouterr().err
    assert _main("--dtypes", "int8") == 2
    assert "unsupported dtype" in capsys.readouterr().err
    assert _main("--device", "tpu") == 2
    if not torch.cuda.is_available():
        assert _main("--device", "cuda") == 2
        assert "CUDA is not available" in capsys.readouterr().err


def test_add_arguments_defaults():
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    args = p.parse_args([])
    assert args.size == 1 << 20 and args.direction == "both" and args.device == "cpu"
    assert args.out == "results/bench.jsonl" and args.parts == "protocol,sweep,degree"
    assert bench._int_list("64K,1M,2:4") == [65536, 1 << 20, 2, 3, 4]
