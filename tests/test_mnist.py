"""The MNIST training comparison (experiments.mnist, ``python -m experiments mnist``).

Needs the real MNIST (``make test`` runs ``make data`` first; missing data fails). The full
protocols take minutes and are not run here; the quick setting of every protocol is.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import turbogelu
from experiments import mnist, mnist_cli, mnist_settings

ROOT = Path(__file__).resolve().parents[1]
TINY = mnist.Config(epochs=1, train_subset=1000, test_subset=500)
LINE = re.compile(
    r"^epoch \d\d \| exact train/test acc \d\.\d{4}/\d\.\d{4} \| "
    r"turbo train/test acc \d\.\d{4}/\d\.\d{4}$"
)


@pytest.fixture(scope="module")
def tiny_data():
    return mnist.prepare_data(None, TINY.train_subset, TINY.test_subset)


def _run(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "experiments", "mnist", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_cli_module_is_torch_free_and_names_agree():
    code = (
        "import sys, experiments.mnist_cli, experiments.mnist_report;"
        " assert 'torch' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # one table of names, which the training and the command line both read
    assert mnist.ACTIVATIONS is mnist_cli.ACTIVATIONS is mnist_settings.ACTIVATIONS
    assert ", ".join(mnist.ACTIVATIONS) in _cli_help()


def _cli_help() -> str:
    p = argparse.ArgumentParser()
    mnist_cli.add_arguments(p)
    return " ".join(p.format_help().split())


def test_the_training_does_not_import_the_command_line():
    code = "import sys, experiments.mnist; assert 'experiments.mnist_cli' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_activations_are_the_named_modules():
    assert type(mnist.make_activation("exact")) is nn.GELU
    assert mnist.make_activation("tanh").approximate == "tanh"
    t = mnist.make_activation("turbogelu", backward="matched")
    assert isinstance(t, turbogelu.GELU) and t.approximate == "none" and t.backward == "matched"
    assert mnist.make_activation("turbogelu-tanh").approximate == "tanh"
    with pytest.raises(ValueError, match="unknown activation 'relu'; choose from exact"):
        mnist.make_activation("relu")
    with pytest.raises(ValueError, match="unknown activation"):
        mnist.build_mlp("gelu", 0)


def test_same_seed_same_initial_weights_for_every_activation():
    ref = mnist.build_mlp("exact", 7).state_dict()
    assert [tuple(v.shape) for v in ref.values()] == [
        (512, 784), (512,), (512, 512), (512,), (10, 512), (10,)
    ]  # fmt: skip
    for name in mnist.ACTIVATIONS:
        m = mnist.build_mlp(name, 7)
        assert sum(isinstance(x, nn.GELU | turbogelu.GELU) for x in m) == 2
        for k, v in m.state_dict().items():
            assert torch.equal(v, ref[k]), (name, k)
    other = mnist.build_mlp("exact", 8).state_dict()
    assert not torch.equal(other["0.weight"], ref["0.weight"])


def test_same_seed_same_batch_order_for_every_activation(tiny_data):
    perms = []
    for name in ("exact", "turbogelu"):
        run = mnist.Run(name, 3, TINY, tiny_data)
        perms.append([torch.randperm(100, generator=run.order) for _ in range(2)])
    assert all(torch.equal(a, b) for a, b in zip(*perms, strict=True))


def test_set_activation_swaps_every_gelu():
    m = mnist.set_activation(mnist.build_mlp("exact", 0), "turbogelu-tanh")
    gelus = [x for x in m if isinstance(x, nn.GELU | turbogelu.GELU)]
    assert len(gelus) == 2 and all(isinstance(g, turbogelu.GELU) for g in gelus)
    assert all(g.approximate == "tanh" for g in gelus)


@pytest.mark.parametrize("activation", ["exact", "turbogelu"])
def test_two_identical_runs_are_bitwise_equal(tiny_data, activation):
    before = torch.are_deterministic_algorithms_enabled()
    a = mnist.train(activation, 5, TINY, tiny_data, progress=False)
    b = mnist.train(activation, 5, TINY, tiny_data, progress=False)
    for (k, va), vb in zip(a.model.state_dict().items(), b.model.state_dict().values(),
                           strict=True):  # fmt: skip
        assert torch.equal(va.view(torch.int32), vb.view(torch.int32)), k
    strip = [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in a.history]
    assert strip == [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in b.history]
    assert torch.are_deterministic_algorithms_enabled() == before  # restored afterwards


def test_turbogelu_run_differs_from_exact_only_slightly(tiny_data):
    a = mnist.train("exact", 5, TINY, tiny_data, progress=False)
    b = mnist.train("turbogelu", 5, TINY, tiny_data, progress=False)
    d = mnist.max_weight_difference(a.model, b.model)
    assert 0 < d < 1e-3


def test_seed_lines_and_first_difference():
    ex = [{"epoch": 1, "train_acc": 0.88614, "test_acc": 0.9453},
          {"epoch": 2, "train_acc": 0.95381, "test_acc": 0.9621}]  # fmt: skip
    tu = [{"epoch": 1, "train_acc": 0.88612, "test_acc": 0.9453},
          {"epoch": 2, "train_acc": 0.95381, "test_acc": 0.9622}]  # fmt: skip
    line = mnist.seed_line(1, ex[0], tu[0])
    assert line == (
        "epoch 01 | exact train/test acc 0.8861/0.9453 | turbo train/test acc 0.8861/0.9453"
    )
    assert LINE.match(line)
    assert mnist.first_printed_difference(ex, tu) == 2
    assert mnist.first_printed_difference(ex, ex) is None
    back_ex, back_tu = mnist.parse_seed_lines([mnist.seed_line(e["epoch"], e, t)
                                               for e, t in zip(ex, tu, strict=True)])  # fmt: skip
    assert [r["test_acc"] for r in back_tu] == [0.9453, 0.9622]
    assert mnist.first_printed_difference(back_ex, back_tu) == 2
    with pytest.raises(ValueError):
        mnist.parse_seed_lines(["epoch 1: nothing"])


def test_seed_reference_data(tmp_path):
    ref = mnist.load_seed_reference()
    assert len(ref["lines"]) == 35 and len(ref["rows"]) == 70
    assert "TurboGeLU write-up" in ref["source"]
    assert (
        ref["first_difference_epoch"]
        == json.loads(mnist.SEED_REFERENCE.read_text())["first_difference_epoch"]
    )
    bad = {**json.loads(mnist.SEED_REFERENCE.read_text()), "first_difference_epoch": 1}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError):
        mnist.load_seed_reference(tmp_path / "bad.json")


def test_t_interval_and_noise_summary():
    ti = mnist.t_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert ti["mean"] == 3.0 and math.isclose(ti["sd"], math.sqrt(2.5))
    assert math.isclose(ti["t_crit"], 2.7764451, rel_tol=1e-6)
    assert math.isclose(
        ti["ci_high"] - 3.0, 2.7764451 * math.sqrt(2.5) / math.sqrt(5), rel_tol=1e-6
    )
    with pytest.raises(ValueError, match="at least 2"):
        mnist.t_interval([1.0])
    rows = [
        {
            "activation": a,
            "seed": s,
            "epoch": e,
            "test_acc": acc + (e - 2) * 0.1,
            "test_loss": 1 - acc,
        }
        for s, (x, y) in enumerate([(0.97, 0.971), (0.975, 0.974), (0.98, 0.982)])
        for a, acc in (("exact", x), ("turbogelu", y))
        for e in (1, 2)
    ]
    s = mnist.summarize_noise(rows)
    assert s["epoch"] == 2 and s["seeds"] == [0, 1, 2]
    p = s["paired"]["turbogelu-exact"]
    assert [round(v, 6) for v in p["values"]] == [0.001, -0.001, 0.002]
    assert (p["positive"], p["zero"], p["negative"]) == (2, 0, 1)
    assert math.isclose(s["final_test_acc"]["exact"]["mean"], 0.975)
    pl = s["paired_loss"]["turbogelu-exact"]
    assert [round(v, 6) for v in pl["values"]] == [-0.001, 0.001, -0.002]
    assert s["model_differences"] == {}


def test_swap_evaluation_on_the_same_weights(tiny_data):
    run = mnist.train("exact", 1, TINY, tiny_data, progress=False)
    rows = mnist.evaluate_swaps(run.model, tiny_data)
    assert [r["form"] for r in rows] == list(mnist.SWAP_FORMS)
    assert rows[0]["delta_acc"] == 0 and rows[0]["max_abs_logit_diff"] == 0
    by = {r["form"]: r for r in rows}
    assert 0 < by["turbogelu"]["max_abs_logit_diff"] < 1e-3
    assert by["turbogelu"]["max_abs_logit_diff"] < by["tanh"]["max_abs_logit_diff"]
    assert isinstance(run.model[1], nn.GELU)  # the trained model itself is untouched


def test_bad_arguments_are_clear_errors(tiny_data):
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        mnist.Config(epochs=0)
    with pytest.raises(ValueError, match="include it"):
        mnist.run_noise_protocol(TINY, tiny_data, [0, 1], activations=["tanh", "turbogelu"])
    with pytest.raises(ValueError, match="at least 2 distinct seeds"):
        mnist_cli.parse_seeds("1")
    assert mnist_cli.parse_seeds("3") == [0, 1, 2] and mnist_cli.parse_seeds("4,9") == [4, 9]
    r = _run("noise", "--quick", "--activations", "exact,swish", timeout=120)
    assert r.returncode == 2 and "unknown activation 'swish'" in r.stderr
    r = _run("seed", "--root", "/nonexistent/mnist-root", timeout=120)
    assert r.returncode == 1 and "make data" in r.stderr


def test_quick_mode_runs_every_protocol_and_writes_results(tmp_path):
    r = _run("all", "--quick", "--out-dir", str(tmp_path), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    names = {p.name for p in tmp_path.iterdir()}
    for stem in ("seed", "swap", "noise"):
        assert f"mnist_quick_{stem}.json" in names
    assert {"mnist_quick_seed_curves.png", "mnist_quick_noise.png", "mnist_quick_swap.png"} <= names

    seed = json.loads((tmp_path / "mnist_quick_seed.json").read_text())
    assert len(seed["lines"]) == 2 and all(LINE.match(line) for line in seed["lines"])
    assert all(line in r.stdout for line in seed["lines"])
    assert "first epoch whose printed accuracies differ" in r.stdout
    assert [w["epoch"] for w in seed["weight_diff"]] == [1, 2]
    assert all(0 < w["max_abs"] < 1e-2 for w in seed["weight_diff"])
    assert seed["meta"]["config"]["train_subset"] == 5000
    assert seed["meta"]["machine"]["threads"] == 1
    assert {r["activation"] for r in seed["rows"]} == {"exact", "turbogelu"}

    swap = json.loads((tmp_path / "mnist_quick_swap.json").read_text())
    assert {r["form"] for r in swap["swap"]} == set(mnist.SWAP_FORMS)
    assert len(swap["swap"]) == 2 * len(mnist.SWAP_FORMS)

    noise = json.loads((tmp_path / "mnist_quick_noise.json").read_text())
    s = noise["summary"]
    assert s["seeds"] == [0, 1, 2, 3, 4] and s["epoch"] == 2
    assert set(s["paired"]) == {"tanh-exact", "turbogelu-exact"}
    p = s["paired"]["turbogelu-exact"]
    assert p["ci_low"] <= p["mean"] <= p["ci_high"] and p["n"] == 5
    assert len(noise["rows"]) == 5 * 3 * 2
    assert set(s["paired_loss"]) == {"tanh-exact", "turbogelu-exact"}
    md = s["model_differences"]
    assert md["turbogelu-exact"]["n"] == 5 and md["exact seed-to-seed"]["n"] == 4
    # another seed is much further away than another activation
    assert (md["turbogelu-exact"]["max_rel_weight_distance"]
            < md["exact seed-to-seed"]["mean_rel_weight_distance"] / 10)  # fmt: skip
    assert all(r["train_cpu_seconds"] > 0 for r in noise["rows"])
    # the seed protocol's exact run and the noise protocol's seed-0 exact run share settings
    # (seed 0, 2 epochs, same subset): the same bits give the same numbers
    ex = [r for r in seed["rows"] if r["activation"] == "exact"][-1]
    nx = [r for r in noise["rows"] if r["activation"] == "exact" and r["seed"] == 0][-1]
    assert (ex["train_acc"], ex["test_acc"], ex["train_loss"]) == (
        nx["train_acc"], nx["test_acc"], nx["train_loss"]
    )  # fmt: skip


def test_the_experiments_run_one_cpu_program_on_every_machine(tiny_data):
    """Training forces CPU_PROGRAM (the polynomial) whatever the CPU's default, so runs on an
    AVX-512 machine (default cells) and an AVX2 one (default poly) train the same model."""
    from turbogelu import ops as tops

    assert mnist.CPU_PROGRAM == "poly"
    runs = []
    for program in ("cells", "poly"):  # what the process would run outside the experiment
        with tops.use_cpu_kernel(program):
            with mnist.deterministic(1):
                assert tops.cpu_kernel() == mnist.CPU_PROGRAM
            runs.append(mnist.train("turbogelu", 5, TINY, tiny_data, progress=False))
            assert tops.cpu_kernel() == program  # restored afterwards
    for va, vb in zip(runs[0].model.state_dict().values(), runs[1].model.state_dict().values(),
                      strict=True):  # fmt: skip
        assert torch.equal(va.view(torch.int32), vb.view(torch.int32))
