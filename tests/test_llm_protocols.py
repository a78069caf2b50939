"""The language-model protocols (experiments/llm_protocols.py, llm_cli.py, llm_report.py):
quick runs write every field, the arms differ only in their functions, the intervals, the
swap uses the native checkpoint, the command line's errors."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from experiments import cli, llm, llm_protocols, llm_report, llm_settings, shakespeare

TINY = llm.Config(context=16, width=32, heads=2, layers=1, mlp_ratio=2)
S = llm_protocols.Settings(model=TINY, batch=2, steps=4, evals=2, val_windows=4, warmup=1)


def _corpus():
    try:
        return llm_protocols.load_corpus()
    except shakespeare.CorpusUnavailable as exc:
        pytest.skip(f"no corpus: {exc}")


@pytest.fixture(scope="module")
def corpus():
    return _corpus()


@pytest.fixture(scope="module")
def quick_all(llm_quick_all):
    return llm_quick_all  # conftest's one quick run of every protocol


def _load(out, name):
    return json.loads((out / f"llm_quick_{name}.json").read_text())


def test_quick_seed_writes_every_field(quick_all):
    res = _load(quick_all, "seed")
    assert res["kind"] == "experiments.llm.seed"
    assert res["meta"]["settings"]["steps"] == llm_settings.QUICK["seed_steps"]
    assert res["meta"]["command"].startswith("python -m experiments llm all --quick")
    assert {(r["task"], r["arm"]) for r in res["runs"]} == {
        (t, a) for t in llm.TASKS for a in ("native", "polynomial")
    }
    for r in res["runs"]:
        assert len(r["train_loss"]) == r["steps"] == llm_settings.QUICK["seed_steps"]
        assert [v["step"] for v in r["val"]][0] == 0 and r["val"][-1]["step"] == r["steps"]
        assert r["final_val_loss"] == r["val"][-1]["loss"]
        assert all(math.isfinite(x) for x in r["train_loss"])
        assert r["tokens_per_second"] > 0
    assert set(res["differences"]) == set(llm.TASKS)
    for task, d in res["differences"].items():
        runs = {r["arm"]: r for r in res["runs"] if r["task"] == task}
        want = runs["polynomial"]["final_val_loss"] - runs["native"]["final_val_loss"]
        assert d["val_loss_change"] == want
        # the polynomial arm really is another function: the losses are not all equal,
        # but close (float32 error of the ops, a dozen steps)
        assert not d["identical_losses"]
        assert abs(d["train_loss_change"]) < 1e-3
    assert res["paper"]["table7"] == llm_settings.PAPER_TABLE7
    assert (quick_all / "llm_quick_seed_curves.png").stat().st_size > 0


def test_quick_noise_writes_every_field(quick_all):
    res = _load(quick_all, "noise")
    seeds = list(range(llm_settings.QUICK["noise_seeds"]))
    assert len(res["rows"]) == len(llm.TASKS) * len(seeds) * 2
    for task in llm.TASKS:
        s = res["summary"][task]
        assert s["seeds"] == seeds
        for key, _ in llm_report.MEASURES:
            p = s[key]["paired"]["polynomial-native"]
            for f in ("mean", "sd", "ci_low", "ci_high", "values", "positive", "contains_zero"):
                assert f in p
            assert p["ci_low"] <= p["mean"] <= p["ci_high"]
            assert len(s[key]["spread"]["native"]["values"]) == len(seeds)
    assert (quick_all / "llm_quick_noise.png").is_file()


def test_quick_all_runs_the_bf16_study_and_the_rest_stays_float32(quick_all):
    """``llm all`` writes the bfloat16 study (issue 38; its fields: tests/test_llm_bf16.py)
    beside the float32 protocols, whose settings say float32."""
    res = _load(quick_all, "bf16")
    assert res["kind"] == "experiments.llm.bf16"
    assert res["meta"]["settings"]["precision"] == "bfloat16"
    assert len(res["table"]) == 2 * len(llm.TASKS)
    for name in ("seed", "noise", "swap", "throughput"):
        assert _load(quick_all, name)["meta"]["settings"]["precision"] == "float32"


def test_quick_swap_uses_the_native_checkpoint(quick_all):
    res = _load(quick_all, "swap")
    seed = _load(quick_all, "seed")
    native = {r["task"]: r["final_val_loss"] for r in seed["runs"] if r["arm"] == "native"}
    assert res["meta"]["trained_with"] == "native"
    for task in llm.TASKS:
        rows = {r["form"]: r for r in res["swap"] if r["task"] == task}
        assert list(rows) == ["native", "polynomial", "polynomial-paper", "polynomial-softmax"]
        # the softmax form changes the attention's softmax on top of the accurate tier's ops
        # (b3 has no softmax: there it is the polynomial form, bit for bit)
        soft, poly = rows["polynomial-softmax"], rows["polynomial"]
        assert math.isfinite(soft["val_loss"]) and soft["max_abs_logit_diff"] < 1e-3
        if task == "b3":
            assert (soft["val_loss"], soft["max_abs_logit_diff"]) == (
                poly["val_loss"],
                poly["max_abs_logit_diff"],
            )
        # the reference row is the seed protocol's native run, evaluated again: same bits
        assert rows["native"]["val_loss"] == native[task]
        assert rows["native"]["delta_val_loss"] == 0 and rows["native"]["max_abs_logit_diff"] == 0
        assert rows["polynomial"]["max_abs_logit_diff"] > 0
        assert rows["polynomial"]["delta_val_loss"] == (
            rows["polynomial"]["val_loss"] - rows["native"]["val_loss"]
        )
        assert res["checkpoints"][task]["final_val_loss"] == native[task]


def test_quick_throughput_writes_every_field(quick_all):
    res = _load(quick_all, "throughput")
    assert [r["task"] for r in res["rows"]] == list(llm.TASKS)
    for r in res["rows"]:
        for arm in ("native", "polynomial"):
            a = r["arms"][arm]
            assert len(a["round_means"]["step"]) == llm_settings.QUICK["throughput_rounds"]
            assert a["forward_seconds"] + a["backward_seconds"] <= a["step_seconds"] * 1.0001
            assert 0 < a["activation_share"] < 1
            assert a["tokens_per_second"] > 0
        n, p = r["arms"]["native"], r["arms"]["polynomial"]
        assert r["speedup"]["step"] == n["step_seconds"] / p["step_seconds"]
        assert r["throughput_ratio"] == pytest.approx(r["speedup"]["step"])
    assert res["paper"]["table5"] == llm_settings.PAPER_TABLE5
    assert "cannot" in res["caveat"]


def test_the_arms_differ_only_in_the_functions(corpus):
    """Two native arms give identical losses (same init, same batches); a copy of the native
    arm with one function replaced by a different but equal-valued one changes nothing either;
    another seed changes the losses."""
    twin = {"native": llm.NATIVE, "twin": dataclasses.replace(llm.NATIVE, name="twin")}
    res, _ = llm_protocols.run_seed_protocol(["b4", "b2"], S, corpus, 3, arms_=twin)
    for task in ("b4", "b2"):
        assert res["differences"][task]["identical_losses"]
        assert res["differences"][task]["val_loss_change"] == 0
    other, _ = llm_protocols.run_seed_protocol(["b4"], S, corpus, 4, arms_=twin)
    a = next(r for r in res["runs"] if r["task"] == "b4")["train_loss"]
    b = next(r for r in other["runs"] if r["task"] == "b4")["train_loss"]
    assert a != b


def test_the_polynomial_arm_runs_every_task_forward_and_backward():
    arm = llm_protocols.arms()["polynomial"]
    ids = torch.randint(0, TINY.vocab, (2, 17), generator=torch.Generator().manual_seed(0))
    for task in llm.TASKS:
        n, p = llm.build(TINY, task, llm.NATIVE, 1), llm.build(TINY, task, arm, 1)
        logits_n, ln = n(ids[:, :-1], ids[:, 1:])
        logits_p, lp = p(ids[:, :-1], ids[:, 1:])
        ln.backward()
        lp.backward()
        assert 0 < (logits_p - logits_n).abs().max().item() < 1e-3, task
        for (name, a), b in zip(n.named_parameters(), p.parameters(), strict=True):
            assert b.grad is not None, name
            torch.testing.assert_close(b.grad, a.grad, atol=1e-4, rtol=1e-3)


def test_set_arm_swaps_every_function():
    model = llm.build(TINY, "b4", llm.NATIVE, 0)
    arm = llm_protocols.arms()["polynomial"]
    llm_protocols.set_arm(model, arm)
    assert all(
        m.arm is arm for m in model.modules() if isinstance(m, llm.Attention | llm.RoutedSwiGLU)
    )
    dense = llm.build(TINY, "gelu", llm.NATIVE, 0)
    llm_protocols.set_arm(dense, arm)
    assert all(m.act is arm.gelu for m in dense.modules() if isinstance(m, llm.DenseMLP))


def test_intervals_on_synthetic_data():
    rows = []
    native = [2.0, 2.1, 1.9, 2.05, 1.95]
    shift = [0.01, 0.03, 0.02, 0.02, 0.02]  # mean 0.02, sd 0.00707
    for seed, (v, d) in enumerate(zip(native, shift, strict=True)):
        for arm, x in (("native", v), ("polynomial", v + d)):
            rows.append({"task": "b1", "arm": arm, "seed": seed,
                         "final_train_loss_smoothed": x, "final_val_loss": x})  # fmt: skip
    s = llm_protocols.summarize_noise(rows)["b1"]["final_val_loss"]
    p = s["paired"]["polynomial-native"]
    sd = math.sqrt(sum((d - 0.02) ** 2 for d in shift) / 4)
    half = 2.7764451051977987 * sd / math.sqrt(5)  # t(0.975, 4)
    assert p["mean"] == pytest.approx(0.02)
    assert p["sd"] == pytest.approx(sd)
    assert (p["ci_low"], p["ci_high"]) == pytest.approx((0.02 - half, 0.02 + half))
    assert not p["contains_zero"] and p["positive"] == 5
    assert s["spread"]["native"]["sd"] == pytest.approx(0.0790569, rel=1e-5)
    assert p["mean_over_ref_sd"] == pytest.approx(0.02 / 0.0790569, rel=1e-5)


def test_ewm_and_eval_points():
    assert llm_protocols.ewm([3.0], 5) == 3.0
    assert llm_protocols.ewm([1.0, 3.0], 1) == pytest.approx((0.5 * 1 + 3) / 1.5)
    assert llm_protocols.ewm([2.0] * 10, 0.5) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        llm_protocols.ewm([], 1)
    assert llm_protocols.eval_points(240, 8) == [0, 30, 60, 90, 120, 150, 180, 210, 240]
    assert llm_protocols.eval_points(5, 1) == [0, 5]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="tier"):
        llm_protocols.Settings(tier="fast")
    with pytest.raises(ValueError, match="steps"):
        llm_protocols.Settings(steps=0)
    with pytest.raises(ValueError, match="tasks"):
        llm_protocols.check_tasks(["b1", "b9"])
    with pytest.raises(ValueError, match="2 distinct seeds"):
        llm_protocols.check_seeds([1, 1])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tasks", "b1,b7"], "--tasks"),
        (["--tasks", "b1,b1"], "--tasks"),
        (["--seeds", "1"], "--seeds"),
        (["--seeds", "a,b"], "--seeds"),
        (["--steps", "0"], "--steps"),
    ],
)
def test_cli_argument_errors(argv, message, capsys, tmp_path):
    assert cli.main(["llm", "noise", "--quick", "--out-dir", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err
    assert not list(tmp_path.iterdir())


def test_cli_missing_corpus(capsys, tmp_path):
    assert cli.main(["llm", "seed", "--quick", "--root", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert "corpus.json: missing" in err and "make data" in err


def test_cli_unknown_protocol(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["llm", "train"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
