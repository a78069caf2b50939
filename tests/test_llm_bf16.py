"""The bfloat16 study (issue 38, item 1: the paper's Table 7 in miniature with its programs,
``python -m experiments llm bf16``): the model computes in bfloat16 where it should, a quick
run gives every task and tier with paired intervals, the flag "outside the noise" follows from
the interval, and the paper's table renders from notebook 11's record or says Missing."""

from __future__ import annotations

import json
import math

import pytest
import torch

from experiments import llm, llm_protocols, llm_report, llm_settings, paper

TINY = llm.Config(context=16, width=32, heads=2, layers=1, mlp_ratio=2)


@pytest.fixture(scope="module")
def quick_bf16(llm_quick_all):
    """The study as conftest's one quick ``llm all`` ran it."""
    return json.loads((llm_quick_all / "llm_quick_bf16.json").read_text())


def _spy(arm: llm.Arm, seen: list) -> llm.Arm:
    """``arm`` with every function noting the dtype of its first input."""
    import dataclasses

    def wrap(fn):
        def call(x, *rest):
            seen.append(x.dtype)
            return fn(x, *rest)

        return call

    names = ("gelu", "silu", "sigmoid", "softcap", "swiglu")
    return dataclasses.replace(arm, **{n: wrap(getattr(arm, n)) for n in names})


@pytest.mark.parametrize("task", llm.TASKS)
def test_bfloat16_reaches_the_transcendentals_and_the_weights_stay_float32(task):
    ids = torch.randint(0, TINY.vocab, (2, 9), generator=torch.Generator().manual_seed(0))
    seen: list = []
    model = llm.build(TINY, task, _spy(llm.polynomial_arm("paper"), seen), 0, "bfloat16")
    logits, loss = model(ids[:, :-1], ids[:, 1:])
    assert seen and set(seen) == {torch.bfloat16}  # what the activation actually received
    assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
    loss.backward()
    assert all(p.dtype == torch.float32 and p.grad is not None for p in model.parameters())
    seen.clear()
    llm.build(TINY, task, _spy(llm.NATIVE, seen), 0)(ids)  # float32 stays float32
    assert set(seen) == {torch.float32}


def test_the_products_round_like_a_bfloat16_gemm():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(5, 7, generator=g), torch.randn(7, 3, generator=g)
    with llm.bfloat16_products():
        out = a @ b
        lin = torch.nn.functional.linear(a, b.T)
    want = (a.bfloat16().float() @ b.bfloat16().float()).bfloat16()
    assert out.dtype == lin.dtype == torch.bfloat16
    assert torch.equal(out, want) and torch.equal(lin, want)
    assert (a @ b).dtype == torch.float32  # outside, nothing changes


def test_bad_precision_is_refused():
    with pytest.raises(ValueError, match="precision must be one of"):
        llm_protocols.Settings(model=TINY, precision="float16")
    with pytest.raises(ValueError, match="precision must be one of"):
        llm.build(TINY, "gelu", llm.NATIVE, 0, "half")
    with pytest.raises(ValueError, match="needs precision 'bfloat16'"):
        llm_protocols.run_bf16_protocol(["gelu"], llm_protocols.Settings(model=TINY), None, [0, 1])


def test_quick_run_gives_every_task_and_tier(quick_bf16):
    res = quick_bf16
    q = llm_settings.QUICK
    assert res["kind"] == "experiments.llm.bf16"
    assert res["meta"]["settings"]["precision"] == "bfloat16"
    assert res["meta"]["settings"]["steps"] == q["bf16_steps"]
    assert res["meta"]["arms"] == ["native", "polynomial", "polynomial-paper"]
    assert len(res["meta"]["seeds"]) == q["bf16_seeds"] >= 3
    assert {(r["task"], r["tier"]) for r in res["table"]} == {
        (t, tier) for t in llm.TASKS for tier in ("accurate", "paper")
    }
    for r in res["table"]:
        assert r["seeds"] == q["bf16_seeds"]
        for m in (r["train"], r["val"]):
            assert len(m["values"]) == q["bf16_seeds"]
            assert all(math.isfinite(m[k]) for k in ("mean", "ci_low", "ci_high", "native_sd"))
            assert m["ci_low"] <= m["mean"] <= m["ci_high"]
            # "outside the noise": the interval excludes 0, nothing else
            assert m["outside_noise"] == (not m["ci_low"] <= 0 <= m["ci_high"])
        assert math.isfinite(r["swap_delta_val_loss"])
        paper_change = llm_settings.PAPER_TABLE7.get(r["task"], {}).get("change")
        assert r["paper_table7_change"] == paper_change
    # the swap: the first seed's native checkpoint with both tiers, native first
    forms = {(r["task"], r["form"]) for r in res["swap"]}
    assert forms == {(t, f) for t in llm.TASKS for f in res["meta"]["arms"]}
    assert all(r["delta_val_loss"] == 0 for r in res["swap"] if r["form"] == "native")


def test_the_paired_difference_is_the_tier_minus_native_of_the_same_seed(quick_bf16):
    rows = {(r["task"], r["arm"], r["seed"]): r for r in quick_bf16["rows"]}
    seeds = quick_bf16["meta"]["seeds"]
    for r in quick_bf16["table"]:
        for m, key in ((r["train"], "final_train_loss_smoothed"), (r["val"], "final_val_loss")):
            want = [
                rows[r["task"], r["arm"], s][key] - rows[r["task"], "native", s][key] for s in seeds
            ]
            assert m["values"] == pytest.approx(want, abs=0, rel=0)
            assert m["mean"] == pytest.approx(sum(want) / len(want))


def test_table6_runs_on_the_bfloat16_checkpoints(quick_bf16):
    """Issue 38, item 3: the ablation evaluates the study's seed checkpoints (the same models
    as its swap: the native row's loss is the swap's native loss, bit for bit) in bfloat16,
    every task, form and condition."""
    from experiments import llm_ablation

    abl = quick_bf16["ablation"]
    assert abl["dtype"] == ["bfloat16"] and abl["precision"] == ["bfloat16"]
    conds = {llm_ablation.condition(None), *map(llm_ablation.condition, abl["reaches"])}
    assert {(r["task"], r["form"], r["condition"]) for r in abl["rows"]} == {
        (t, f, c) for t in llm.TASKS for f in llm_ablation.FORMS for c in conds
    }
    swap = {r["task"]: r["val_loss"] for r in quick_bf16["swap"] if r["form"] == "native"}
    trained = {
        r["task"]: r["val_loss"]
        for r in abl["rows"]
        if r["form"] == "native" and r["condition"] == "trained"
    }
    assert trained == swap
    # what the activations saw is bfloat16: every recorded extreme is a bfloat16 value
    for task, by_cond in abl["ranges"].items():
        for site, o in by_cond["trained"].items():
            for v in (o["min"], o["max"]):
                assert torch.tensor(v).bfloat16().item() == v, (task, site, v)
    # the same programs as the float32 checkpoint's ablation (a quick run: Remez's minimax)
    assert abl["minimax_fitter"].startswith("remez+search")
    assert all(math.isfinite(r["val_loss"]) for r in abl["rows"])


def test_the_flag_follows_the_interval_on_synthetic_data():
    def row(arm, seed, v):
        return {"task": "b1", "arm": arm, "seed": seed,
                "final_train_loss_smoothed": v, "final_val_loss": v}  # fmt: skip

    rows = [row("native", s, 1.0 + 0.01 * s) for s in range(5)]
    rows += [row("polynomial", s, 1.0 + 0.01 * s + 0.1) for s in range(5)]  # +0.1 always
    rows += [row("polynomial-paper", s, 1.0 + 0.01 * s + (-1) ** s * 1e-3) for s in range(5)]
    table = llm_report.bf16_table(llm_protocols.summarize_noise(rows))
    by_tier = {r["tier"]: r for r in table}
    assert by_tier["accurate"]["val"]["outside_noise"]
    assert by_tier["accurate"]["val"]["mean"] == pytest.approx(0.1)
    assert not by_tier["paper"]["val"]["outside_noise"]
    assert by_tier["accurate"]["swap_delta_val_loss"] is None


def test_the_paper_table_renders_from_the_record_and_says_missing_without(quick_bf16, tmp_path):
    text = llm_report.render_table7_bf16(quick_bf16)
    assert "| gelu | paper |" in text and "| b4 | accurate |" in text
    assert f"{llm_settings.PAPER_TABLE7['b3']['change']:+.4f}" in text  # the paper beside
    assert "tier minus native" in llm_report.bf16_text(quick_bf16)
    (tmp_path / "11_llm_tasks.json").write_text(json.dumps({"bf16": quick_bf16}))
    assert "| b2 | paper |" in paper.fill("{{ table: table7_bf16 }}", tmp_path).text
    table6 = paper.fill("{{ table: table6_bf16 }}", tmp_path).text
    assert "| b3 | minimax |" in table6 and "| sigmoid |" in table6
    old = {k: v for k, v in quick_bf16.items() if k != "ablation"}  # a record from before it
    (tmp_path / "11_llm_tasks.json").write_text(json.dumps({"bf16": old}))
    with pytest.raises(paper.Missing, match="nb11.bf16.ablation"):
        paper.fill("{{ table: table6_bf16 }}", tmp_path)
    (tmp_path / "11_llm_tasks.json").write_text(json.dumps({"figures": {}}))
    for table in ("table7_bf16", "table6_bf16"):
        with pytest.raises(paper.Missing, match="nb11.bf16"):
            paper.fill(f"{{{{ table: {table} }}}}", tmp_path)


def test_the_cli_knows_the_protocol():
    from experiments import llm_cli

    assert "bf16" in llm_cli.PROTOCOLS
