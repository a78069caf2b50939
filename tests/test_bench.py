"""Smoke tests of the speed benchmark (``python -m turbogelu bench``).

They check that every row is measured and reported, never how fast anything is: speed is not
a unit-test matter (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from turbogelu import bench

ROOT = Path(__file__).resolve().parents[1]
SIZE, ROUNDS, CALLS = 4096, 3, 2


def _run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "turbogelu", "bench", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _positive_finite(t: float) -> bool:
    return math.isfinite(t) and t > 0


def test_import_does_not_import_torch():
    code = "import sys, turbogelu.bench; assert 'torch' not in sys.modules, 'torch imported'"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_time_interleaved_counts_rounds_and_calls():
    counts = {"a": 0, "b": 0}

    def call(name):
        counts[name] += 1

    variants = [bench.Variant(k, lambda k=k: call(k)) for k in counts]
    t = bench.time_interleaved(variants, rounds=4, calls=3, warmup=2)
    assert counts == {"a": 3 + 4 * 3, "b": 3 + 4 * 3}  # warm-up: max(warmup, calls) calls
    for k in counts:
        assert len(t.wall[k]) == len(t.cpu[k]) == 4
        assert all(_positive_finite(w) for w in t.wall[k])


def test_ops_rows_and_table():
    directions = ("forward", "backward")
    rows = bench.run_ops(directions, bench.DTYPES_QUICK, SIZE, ROUNDS, CALLS)
    expected = {(d, t, m) for d in directions for t in bench.DTYPES_QUICK for m in bench.METHODS[d]}
    assert {(r["direction"], r["dtype"], r["method"]) for r in rows} == expected
    assert len(rows) == len(expected)
    for r in rows:
        for key in ("median_us", "p5_us", "p95_us", "vs_turbogelu", "per_limit"):
            assert _positive_finite(r[key]), (r, key)
        assert r["p5_us"] <= r["median_us"] <= r["p95_us"]
        assert r["rounds"] == ROUNDS
        if r["method"] == "turbogelu":
            assert r["vs_turbogelu"] == 1.0
        if r["method"] == bench.LIMIT[r["direction"]]:
            assert r["per_limit"] == 1.0
    table = bench.render_table(rows)
    lines = table.splitlines()
    assert len(lines) == 2 + len(rows)
    for d, t, m in expected:
        assert any(line.startswith(f"| {d} | {t} | {m} | ") for line in lines), (d, t, m)


def test_make_variants_rejects_unknown_direction():
    with pytest.raises(ValueError):
        bench.make_variants("sideways", "float32", SIZE)


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


def test_cli_quick_exits_0(tmp_path):
    out = tmp_path / "bench.jsonl"
    r = _run_cli(
        "--quick", "--size", str(SIZE), "--rounds", str(ROUNDS), "--calls", str(CALLS),
        "--out", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "| forward | float32 | turbogelu |" in r.stdout
    assert "| backward | bfloat16 | mul |" in r.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 * 3 * 6  # directions x dtypes x methods
    assert all(_positive_finite(rec["median_us"]) and rec["size"] == SIZE for rec in records)


def test_cli_rejects_unknown_isa():
    r = _run_cli("--quick", "--size", str(SIZE), "--rounds", "1", "--isa", "no-such-isa")
    assert r.returncode == 2
    assert "not available" in r.stderr


def test_add_arguments_defaults():
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    args = p.parse_args([])
    assert args.size == 1 << 20 and args.calls == 20 and args.direction == "both"
