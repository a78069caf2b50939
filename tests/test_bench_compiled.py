"""experiments.bench_compiled (issue 37, item 4) and its targets (bench_targets.compiled_targets,
item 5): the rows a run makes, what each timed call computes, and the targets' arithmetic on
made-up rows (times are the benchmark's to measure, not a test's)."""

from __future__ import annotations

import pytest
import torch

import turbogelu
from experiments import bench_compiled as bc
from experiments import bench_targets as bt
from turbogelu import ops as tops


def test_the_rows_of_a_group_and_a_small_run():
    """A unary function's group has the alone rows and its chains' (made, not run: torch.compile
    compiles at the first call); a small run of swiglu alone (4096 elements, one round) times
    every row and labels it."""
    variants = bc.group_variants("gelu", "float32", size=4096)
    got = {(v.labels["chain"], v.labels["method"]) for v in variants}
    alone = {"copy", "torch eager", "turbogelu eager", "torch compiled", "turbogelu compiled"}
    chain = {"no activation compiled", "torch compiled", "turbogelu compiled", "turbogelu eager"}
    assert got == {("alone", m) for m in alone} | {(c, m) for c in ("bias", "residual")
                                                     for m in chain}  # fmt: skip
    records = bc.run(("swiglu",), ("float32",), rounds=1, block=False, size=4096)
    assert {r["method"] for r in records} == alone
    assert all(r["bench"] == "compiled" and r["p50_us"] > 0 and r["threads"] == 1
               and r["vec_isa"] == bc.vec_isa() for r in records)  # fmt: skip


def test_the_timed_calls_compute_what_they_say():
    """Each compiled row's function gives its eager twin's values (turbogelu compiled: the
    polynomial program; PyTorch compiled: PyTorch's function, within the tier's bound)."""
    chains = ("alone", "softmax")
    variants = {v.labels["chain"] + " " + v.labels["method"]: v
                for v in bc.group_variants("softcap", "float32", 8192, chains)}  # fmt: skip
    with tops.use_cpu_kernel("poly"):
        for chain in chains:
            ours = variants[f"{chain} turbogelu compiled"].fn()
            torch.testing.assert_close(ours, variants[f"{chain} turbogelu eager"].fn(),
                                       rtol=0, atol=2e-6)  # fmt: skip
            theirs = variants[f"{chain} torch compiled"].fn()
            torch.testing.assert_close(ours, theirs, rtol=0, atol=3e-5 * bc.CAP)
        # the package's softmax compiled: the kernel's but for its sum's order (rows of 1024:
        # tests/test_inductor.py's bound)
        got = variants["softmax turbogelu softmax compiled"].fn()
        x = torch.randn(8192, generator=torch.Generator().manual_seed(3)) * 3  # group_variants'
        want = turbogelu.softmax(turbogelu.softcap(x.reshape(-1, bc.SCORES[1]), bc.CAP), -1)
        assert ((got - want).abs() <= (2 * (bc.SCORES[1] - 1) + 4) * 2.0**-24 * want).all()


def _row(function, chain, method, us, dtype="float32", isa="avx2"):
    return {"bench": "compiled", "function": function, "chain": chain, "method": method,
            "dtype": dtype, "p50_us": us, "vec_isa": isa}  # fmt: skip


def test_targets_on_made_up_rows():
    rows = [
        _row("gelu", "alone", "turbogelu compiled", 90),
        _row("gelu", "alone", "torch compiled", 100),
        _row("silu", "alone", "turbogelu compiled", 110),
        _row("silu", "alone", "torch compiled", 100),
        _row("gelu", "bias", "turbogelu compiled", 150),
        _row("gelu", "bias", "torch compiled", 160),
        _row("gelu", "bias", "turbogelu eager", 140),
        _row("gelu", "bias", "no activation compiled", 100),
        _row("tanh", "bias", "turbogelu compiled", 108, isa="avx512"),
        _row("tanh", "bias", "no activation compiled", 100, isa="avx512"),
        _row("gelu", "block", "turbogelu compiled", 10, isa="avx512"),
        _row("gelu", "block", "torch compiled", 10, isa="avx512"),
    ]
    t = {(x["target"].split(":")[0], x["function"], x["against"]): x
         for x in bt.compiled_targets(rows)}  # fmt: skip
    assert t[("alone", "gelu", "torch compiled")]["met"]
    assert not t[("alone", "silu", "torch compiled")]["met"]
    # AVX2: faster than PyTorch's compiled chain (met) and than the eager chain (not: 150 > 140)
    assert t[("bias chain", "gelu", "torch compiled")]["met"]
    assert not t[("bias chain", "gelu", "turbogelu eager")]["met"]
    # AVX-512: within 1.10 of the chain without the activation
    avx512 = t[("bias chain", "tanh", "no activation compiled")]
    assert avx512["met"] and avx512["bound"] == bt.COMPILED_CHAIN_SLACK
    assert t[("block", "gelu", "torch compiled")]["met"]  # equal times meet "<="
    lines = bt.render_compiled(bt.compiled_targets(rows))
    assert lines[0].startswith("| target |") and any("NO" in line for line in lines)
    # the targets table of a compiled run: its verdicts alone, not GELU's missing protocol
    result = bt.evaluate(rows)
    assert result["compiled"]["targets"] == bt.compiled_targets(rows)
    assert result["compiled"]["all_met"] is False
    text = bt.render(result)
    assert "Under torch.compile" in text and "Protocol" not in text and "| tanh |" in text


def test_the_command_writes_the_rows_and_their_targets(tmp_path, capsys):
    out = tmp_path / "bench_compiled.jsonl"
    assert bc.main(["--quick", "--functions", "swiglu", "--no-block", "--out", str(out)]) == 0
    import json

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    targets = json.loads((tmp_path / "bench_compiled_targets.json").read_text())
    assert targets["compiled"]["targets"] == bt.compiled_targets(rows)
    assert "| alone: turbogelu compiled / torch compiled | swiglu |" in capsys.readouterr().out


def test_unknown_functions_are_refused():
    with pytest.raises(ValueError, match="unknown function"):
        bc.run(("relu",))
