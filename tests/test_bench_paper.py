"""The source paper's Table 4 and Tables 9-10 on the CPU (experiments/bench_paper.py): the
attention harness computes attention, every row is timed, the errors say what the tiers are."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from experiments import bench_paper


def test_the_harness_is_causal_gqa_attention():
    """With torch's softmax and no transform, PyTorch's own causal GQA attention (float32,
    a different order of operations: within a few float32 ulps of the values' scale)."""
    q, k, v = bench_paper.attention_inputs(torch.float32, 64)
    got = bench_paper.softmax_attention("torch")(q, k, v)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert got.shape == (1, bench_paper.HEADS, 64, bench_paper.HEAD_DIM)
    assert torch.allclose(got, want, rtol=0, atol=1e-5)


def test_sigmoid_attention_weighs_only_the_past():
    """B3: sigmoid(s + b) with b = -log(sequence), future keys weighted 0: changing a future
    value leaves every earlier output as it was."""
    seq = 32
    fn = bench_paper.task_functions("B3", "accurate", seq)
    q, k, v = (t.detach().float() for t in bench_paper.attention_inputs(torch.float32, seq))
    y = fn(q, k, v)
    v2 = v.clone()
    v2[:, :, -1] += 10.0
    y2 = fn(q, k, v2)
    assert torch.equal(y[:, :, :-1], y2[:, :, :-1]) and not torch.equal(y[:, :, -1], y2[:, :, -1])


def test_quick_run_has_every_row_and_the_tiers_errors():
    result = bench_paper.run(quick=True)
    rows = {(r["task"], r["direction"], r["variant"]) for r in result["table4"]}
    assert rows == {(t, d, v) for t in bench_paper.TASKS for d in ("forward", "forward+backward")
                    for v in bench_paper.VARIANTS}  # fmt: skip
    assert all(r["p50_us"] > 0 and r["rounds"] == 2 for r in result["table4"] + result["table9"])
    err = {k: v["max"] for k, v in result["table10"].items()}
    # the accurate tier's exp2 is float32-accurate: the attention's error is torch's to within
    # a factor; the paper tier's short program is visibly coarser
    assert err["accurate"] <= 2 * err["torch"] < 1e-5 < err["paper"] < 1e-2
    text = bench_paper.render(result)
    assert "| B4 |" in text and "| paper |" in text
    assert result["shapes"]["score_mib_bfloat16"] == bench_paper.HEADS * 128 * 128 * 2 / 2**20


def test_speedups_and_the_derived_backward():
    rows = [
        {"task": "B1", "direction": d, "variant": v, "p50_us": t}
        for d, v, t in [("forward", "native", 10.0), ("forward", "accurate", 5.0),
                        ("forward", "paper", 4.0), ("forward+backward", "native", 30.0),
                        ("forward+backward", "accurate", 15.0),
                        ("forward+backward", "paper", 24.0)]
    ]  # fmt: skip
    sp = bench_paper.speedups(rows, "variant", "native")
    assert (
        sp[("B1", "forward", "accurate")] == 2.0 and sp[("B1", "forward+backward", "paper")] == 1.25
    )
    bw = bench_paper.backward_speedups(rows)
    assert bw == {("B1", "accurate"): 2.0, ("B1", "paper"): 1.0}


def test_command_writes_its_json(tmp_path, capsys, monkeypatch):
    from experiments import cli

    monkeypatch.setattr(bench_paper, "run", lambda quick, progress: {"quick": quick, "x": 1})
    monkeypatch.setattr(bench_paper, "render", lambda result: "table")
    out = tmp_path / "bp.json"
    assert cli.main(["bench-paper", "--quick", "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == {"quick": True, "x": 1}
    assert "table" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["bench-paper", "--rounds", "3"])  # no such option
