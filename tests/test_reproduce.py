"""make reproduce's plan, and the comparison of a run against the reference run."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest

from experiments import compare, reproduce

# Figure names as the runs write them: an exact one (a fit's error), a numerics one (training)
# and a time; the numerics tolerance is given to the comparison as the measured file would.
NB = "08_cells"
TOL = {"06_mnist_mlp.max_abs_dw_final": 1e-7}


def _write_run(d, *, err=2.5e-5, ulp=1, time_us=270.0, dw=1.8e-5, drop=None, extra=None):
    d.mkdir(parents=True, exist_ok=True)
    figs = {"max_abs_error": err, "alternations": ulp, "time_us_forward": time_us, **(extra or {})}
    if drop:
        figs.pop(drop)
    machine = {"cpu": "CPU A", "logical_cpus": 2}
    (d / f"{NB}.json").write_text(json.dumps({"figures": figs, "machine": machine}))
    mnist = {"figures": {"max_abs_dw_final": dw, "epochs": 2}}
    (d / "06_mnist_mlp.json").write_text(json.dumps(mnist))
    rows = [{"name": "GELU D5", "ls": {"max_abs_error": 1.035e-3}, "best": {"max_abs_error": err}}]
    (d / "table2.json").write_text(json.dumps(rows))
    return d


def _bad(res):
    return sorted(c[0] for c in res["checked"] if not c[4])


EXACT_TEXT = "exact figures (bit for bit, float64 results to 1e-7 relative)"


def test_identical_runs_match(tmp_path):
    a, b = _write_run(tmp_path / "a"), _write_run(tmp_path / "b")
    res = compare.compare(a, b, TOL)
    assert [c[4] for c in res["checked"]] == [True] * 6
    assert [t[0] for t in res["times"]] == [f"{NB}.time_us_forward"]
    text = compare.render(res)
    assert f"{EXACT_TEXT}: 5 of 5 match" in text
    assert "numerics figures (within measured tolerances): 1 of 1 match" in text


def test_an_exact_float64_figure_beyond_1e7_fails_with_its_class(tmp_path):
    ref = _write_run(tmp_path / "ref")
    off = _write_run(tmp_path / "off", err=2.5e-5 * (1 + 1e-6))
    res = compare.compare(off, ref, TOL)
    assert _bad(res) == [f"{NB}.max_abs_error", "table2.GELU D5.best"]
    text = compare.render(res)
    assert f"DIFFERS [exact (a float64 figure: to 1e-7 relative)] {NB}.max_abs_error" in text
    assert compare.main(["--results", str(off), "--reference", str(ref)]) != 0


def test_a_float64_figure_is_compared_to_a_relative_1e7_and_a_count_bit_for_bit(tmp_path):
    # a float64 result's last bits depend on the CPU: a LAPACK fit (measured: up to 1.3e-12
    # relative between the AVX2 EPYC and the Xeon in notebook 07's floors), an error through a
    # BLAS product (1.6e-9 under another OpenBLAS kernel) or against numpy's SIMD exp / tanh, a
    # mean of errors; a count, a degree, ulps are exact
    mean, lower = 8.104391950226424e-05, 0.00017635232661783462
    floats = {"poly_dense_mean_abs": mean, "gelu_d5_better_form_floor_lower": lower}
    ref = _write_run(tmp_path / "ref", extra=floats)
    for rel, ok in ((1.3e-12, True), (1.6e-9, True), (5e-8, True), (1e-6, False)):
        moved = {k: v * (1 + rel) for k, v in floats.items()}
        new = _write_run(tmp_path / f"new{rel}", err=2.5e-5 * (1 + rel), extra=moved)
        res = compare.compare(new, ref, TOL)
        assert compare.failed(res) is not ok, compare.render(res)
        if not ok:
            assert len(_bad(res)) == 4, compare.render(res)
    nan = _write_run(tmp_path / "nan", extra={**floats, "poly_dense_mean_abs": float("nan")})
    assert compare.failed(compare.compare(nan, ref, TOL))
    # an integer figure (here "alternations"): one off fails
    res = compare.compare(_write_run(tmp_path / "count", ulp=2, extra=floats), ref, TOL)
    assert _bad(res) == [f"{NB}.alternations"]
    from experiments import tolerances

    name = f"{NB}.poly_dense_mean_abs"
    assert tolerances.exact_differences({"a": {name: mean}, "b": {name: mean * (1 + 1e-12)}}) == []
    assert tolerances.exact_differences({"a": {name: mean}, "b": {name: mean * (1 + 1e-6)}})


def test_exactly_specified_non_integers_stay_bit_for_bit():
    # settings, float32 / 16-bit values, published numbers, exact arithmetic, mpmath
    for name, v in (
        (f"{NB}.tails_from", 4.999999835573399),
        ("09_min_degree.float16_correct_even_n4_clamp", 3.4453125),
        ("07_polynomial_family.gelu_d5_paper_sollya", 0.0005),
        ("05_timing.seed_ryzen_7_5700x_cpu_forward_float32_speedup_vs_torch_exact", 2.47),
        ("04_derivative_checks.forward_float32_max_abs_vs_mpmath", 2.4989399669888223e-05),
        ("accuracy_gelu_exact.float16.x >= 0.frac_correctly_rounded", 0.9894156560088203),
    ):
        assert compare.classify(name) == compare.EXACT and compare.exact_bits(name), name
        assert compare.exact_match(name, v, v)
        assert not compare.exact_match(name, math.nextafter(v, math.inf), v), name
    # ... while a ratio of a float64 error to a published number is a float64 result
    ratio = "07_polynomial_family.gelu_d5_ls_over_paper_ls"
    assert not compare.exact_bits(ratio) and compare.exact_match(ratio, 1 + 1e-12, 1.0)


def test_every_exact_bits_rule_names_committed_figures_and_the_rtol_is_the_specs():
    from turbogelu.approx import spec

    assert compare.FLOAT64_RTOL == spec.MEASURED_RTOL
    names = [
        n
        for mode in ("quick", "full")
        for n in compare.collect(compare.REFERENCE / mode)
        if compare.classify(n) == compare.EXACT
    ]
    for pattern, why in compare.EXACT_BITS:
        assert why and any(re.search(pattern, n) for n in names), pattern


def test_a_numerics_figure_passes_within_its_tolerance_and_fails_outside(tmp_path):
    ref = _write_run(tmp_path / "ref")
    near = _write_run(tmp_path / "near", dw=1.8e-5 + 0.9e-7)
    assert compare.failed(compare.compare(near, ref, TOL)) is False
    far = _write_run(tmp_path / "far", dw=1.8e-5 + 1.1e-7)
    res = compare.compare(far, ref, TOL)
    assert _bad(res) == ["06_mnist_mlp.max_abs_dw_final"]
    assert "DIFFERS [numerics, tolerance 1e-07, off by 1.1e-07]" in compare.render(res)


def test_times_never_fail(tmp_path, capsys):
    ref = _write_run(tmp_path / "ref")
    slower = _write_run(tmp_path / "slow", time_us=5400.0)
    res = compare.compare(slower, ref, TOL)
    assert not compare.failed(res) and res["times"][0][1:] == (5400.0, 270.0)
    gone = _write_run(tmp_path / "gone", drop="time_us_forward")
    assert not compare.failed(compare.compare(gone, ref, TOL))


def test_an_unclassified_figure_is_an_error(tmp_path, capsys):
    ref = _write_run(tmp_path / "ref")
    new = _write_run(tmp_path / "new")
    (new / "09_new_notebook.json").write_text(json.dumps({"figures": {"x": 1.0}}))
    with pytest.raises(compare.Unclassified, match="09_new_notebook.x"):
        compare.compare(new, ref, TOL)
    assert compare.main(["--results", str(new), "--reference", str(ref)]) == 2
    assert "has no class" in capsys.readouterr().err


def test_a_numerics_figure_without_a_measured_tolerance_is_an_error(tmp_path):
    ref = _write_run(tmp_path / "ref")
    with pytest.raises(compare.Unclassified, match="max_abs_dw_final"):
        compare.compare(_write_run(tmp_path / "new"), ref, {})


def test_missing_figure_fails_and_a_new_one_is_listed(tmp_path):
    ref = _write_run(tmp_path / "ref", drop="alternations")
    new = _write_run(tmp_path / "new")
    assert compare.compare(new, ref, TOL)["new"] == [f"{NB}.alternations"]
    res = compare.compare(ref, new, TOL)
    assert res["missing"] == [(f"{NB}.alternations", "exact")]
    assert f"MISSING [exact] {NB}.alternations" in compare.render(res)


def test_every_committed_figure_is_classified_and_every_numerics_one_has_a_tolerance():
    for mode in ("quick", "full"):
        names = compare.collect(compare.REFERENCE / mode)
        classes = {n: compare.classify(n) for n in names}
        assert set(classes.values()) == set(compare.CLASSES), mode
        tolerances = compare.load_tolerances(mode)
        numerics = [n for n, c in classes.items() if c == compare.NUMERICS]
        assert numerics and all(n in tolerances for n in numerics), mode
        assert all(t >= 0 and math.isfinite(t) for t in tolerances.values())


def test_save_copies_the_run(tmp_path):
    run = _write_run(tmp_path / "results")
    (run / "figures" / "01_x").mkdir(parents=True)
    (run / "figures" / "01_x" / "a.png").write_bytes(b"png")
    ref = tmp_path / "results" / "reference" / "full"
    assert compare.main(["--results", str(run), "--reference", str(ref), "--save"]) == 0
    assert (ref / f"{NB}.json").is_file() and (ref / "figures" / "01_x" / "a.png").is_file()
    assert compare.compare(run, ref, TOL)["missing"] == []


def test_full_save_leaves_out_a_quick_runs_files(tmp_path):
    # make reproduce QUICK=1 in the same results/ leaves mnist_quick_*, bench_quick.* and
    # sweeps/default_quick/; they are not the full run's.
    run = _write_run(tmp_path / "results")
    (run / "mnist_quick_seed.json").write_text("{}")
    (run / "bench_quick.md").write_text("quick")
    (run / "sweeps" / "default_quick").mkdir(parents=True)
    (run / "sweeps" / "default_quick" / "table.md").write_text("quick")
    (run / "sweeps" / "default").mkdir(parents=True)
    (run / "sweeps" / "default" / "table.md").write_text("full")
    ref = tmp_path / "ref"
    compare.save(run, ref)
    saved = sorted(str(p.relative_to(ref)) for p in ref.rglob("*") if p.is_file())
    assert "sweeps/default/table.md" in saved and f"{NB}.json" in saved
    assert not [p for p in saved if "quick" in p], saved


def test_full_save_keeps_the_last_benchmark_run(tmp_path):
    run = _write_run(tmp_path / "results")
    rows = [{"run": "r1", "method": "copy"}, {"run": "r2", "method": "copy"}]
    rows.append({"run": "r2", "method": "turbogelu"})
    (run / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ref = tmp_path / "ref"
    compare.save(run, ref)
    kept = [json.loads(line) for line in (ref / "bench.jsonl").read_text().splitlines()]
    assert kept == rows[1:]


def test_no_reference_is_said_not_failed(tmp_path, capsys):
    run = _write_run(tmp_path / "r")
    assert compare.main(["--results", str(run), "--reference", str(tmp_path / "none")]) == 0
    assert "no reference run" in capsys.readouterr().out


@pytest.mark.parametrize("quick", [True, False])
def test_every_planned_command_parses(quick, monkeypatch):
    # Each step's command line is parsed by the real CLI (an unknown subcommand or option exits
    # with status 2); the command itself is not run.
    import experiments.cli
    import turbogelu.cli

    clis = {"turbogelu": turbogelu.cli, "experiments": experiments.cli}
    ran = []
    for cli in clis.values():
        monkeypatch.setattr(cli, "run_command", lambda args: ran.append(args.command) or 0)
    plan = reproduce.steps(quick)
    assert list(plan) == [
        "table2", "accuracy", "bench", "mnist", "llm", "sweep", "notebooks", "paper"
    ]  # fmt: skip
    assert len(plan["notebooks"]) == len(reproduce._notebooks()) >= 5
    for cmds in plan.values():
        for cmd in cmds:
            assert cmd[:2] == [sys.executable, "-m"] and cmd[2] in clis
            # the product's commands by the product's CLI, the rest by the harness'
            assert (cmd[2] == "turbogelu") == (cmd[3] in ("fit", "codegen", "report"))
            assert clis[cmd[2]].main(cmd[3:]) == 0, cmd
    assert len(ran) == sum(len(c) for c in plan.values())


def test_unknown_step_is_a_usage_error():
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.reproduce", "--only", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "unknown step" in proc.stderr


def test_minimal_save_keeps_only_what_is_compared(tmp_path):
    run = _write_run(tmp_path / "results")
    (run / "other.json").write_text(json.dumps({"no": "figures"}))
    (run / "plot.png").write_bytes(b"png")
    ref = tmp_path / "ref"
    compare.save(run, ref, minimal=True)
    assert sorted(p.name for p in ref.iterdir()) == [
        "06_mnist_mlp.json",
        f"{NB}.json",
        "machine.json",
        "table2.json",
    ]
    assert compare.compare(run, ref, TOL)["missing"] == []


# What a fresh checkout holds that `reproduce --quick` reads (results/ and reports/ start
# empty but for the committed reference).
_CHECKOUT = ("turbogelu", "notebooks", "experiments", "paper", "data/specs", "data/seeds")


# Slow-marked (make test-all runs it): .ci/run runs `make reproduce QUICK=1` itself, after each
# of its two `make test` passes, and fails on a failed step or a compare that differs; this
# copy of the same run took 459 s of each pass on the 2-vCPU AVX2-only EPYC, where CI came to
# about 83 of its 90 minutes with it (2026-12-07). What only this test checks: the reports'
# quick-mode labels and the compare's summary line.
@pytest.mark.slow
def test_quick_reproduce_runs_through_the_paper_and_the_comparison(tmp_path):
    # README's second command, end to end (about 2 minutes on the 2-core build machine), in a
    # copy of the checkout so that this checkout's results/ and reports/ are left alone.
    import os
    import shutil

    repo = tmp_path / "checkout"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in _CHECKOUT:
        shutil.copytree(reproduce.REPO / part, repo / part, ignore=skip)
    shutil.copytree(reproduce.REPO / "results" / "reference", repo / "results" / "reference")
    for dataset in ("MNIST", "shakespeare"):  # what `make data` made (the mnist and llm steps)
        (repo / "data" / dataset).symlink_to((reproduce.REPO / "data" / dataset).resolve())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.reproduce", "--quick"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    log = proc.stdout[-6000:] + proc.stderr[-3000:]
    record = json.loads((repo / "results" / "reproduce.json").read_text())
    steps = {s["step"]: s["status"] for s in record["steps"]}
    assert steps == dict.fromkeys([*reproduce.steps(True), "compare"], "ok"), log
    assert proc.returncode == 0, log
    page = (repo / "reports" / "paper" / "paper.html").read_text()
    assert "<math" in page and "Quick-mode report" in page
    md = (repo / "reports" / "paper" / "paper.md").read_text()
    assert md.startswith("**Quick-mode report**")
    assert f"{EXACT_TEXT}:" in proc.stdout
    for html in (repo / "reports" / "notebooks").glob("*.html"):
        assert "Quick-mode run" in html.read_text(), html.name


def test_tolerances_are_twice_the_largest_difference_and_exact_figures_must_agree():
    from experiments import tolerances

    dw = "06_mnist_mlp.max_abs_dw_final"
    runs = {
        "reference": {dw: 1.0e-5, "table2.GELU D5.best": 5e-4},
        "a": {dw: 1.3e-5, "table2.GELU D5.best": 5e-4},
        "b": {dw: 0.9e-5},
    }
    got = tolerances.differences(runs)
    assert list(got) == [dw] and got[dw]["between"] == ["a", "b"]
    assert got[dw]["tolerance"] == pytest.approx(2 * 0.4e-5)
    assert tolerances.exact_differences(runs) == []
    runs["b"]["table2.GELU D5.best"] = math.nextafter(5e-4, 1.0)  # a float64 figure's last bit
    assert tolerances.exact_differences(runs) == []
    runs["b"]["table2.GELU D5.best"] = 5e-4 * (1 + 1e-6)  # beyond FLOAT64_RTOL
    [(name, values)] = tolerances.exact_differences(runs)
    assert name == "table2.GELU D5.best" and len(values) == 3


def test_a_per_isa_figure_this_cpu_cannot_make_is_said_not_failed(tmp_path, monkeypatch):
    name = "cells_replay_mismatches_avx512"
    ref = _write_run(tmp_path / "ref", extra={name: 0})
    new = _write_run(tmp_path / "new")
    monkeypatch.setattr(compare, "cpu_isas", lambda: ["avx2", "scalar"])
    res = compare.compare(new, ref, TOL)
    assert not compare.failed(res)
    assert res["not_here"] == [(f"{NB}.{name}", "this CPU cannot run avx512")]
    assert "cannot run avx512" in compare.render(res)
    monkeypatch.setattr(compare, "cpu_isas", lambda: ["avx512", "avx2", "scalar"])
    assert compare.compare(new, ref, TOL)["missing"] == [(f"{NB}.{name}", "exact")]
    # notebook 10's names put the format between: replay_mismatches_16bit_<isa>
    fam = "replay_mismatches_16bit_avx512bf16"
    ref = _write_run(tmp_path / "ref10", extra={fam: 0})
    monkeypatch.setattr(compare, "cpu_isas", lambda: ["avx2", "scalar"])
    res = compare.compare(_write_run(tmp_path / "new10"), ref, TOL)
    assert not compare.failed(res)
    assert res["not_here"] == [(f"{NB}.{fam}", "this CPU cannot run avx512bf16")]


def _with_sollya(d, version, err=5.5e-3):
    """A run whose table2.json has the Sollya control of one row, made by ``version``."""
    rows = json.loads((d / "table2.json").read_text())
    sol = {"max_abs_error": err, "sollya_version": version}
    rows[0]["same_sollya"] = sol
    (d / "table2.json").write_text(json.dumps(rows))
    return d


def test_sollya_figures_are_exact_within_one_sollya_version_only(tmp_path):
    name = "table2.GELU D5.same_sollya@sollya-8.0"
    ref = _with_sollya(_write_run(tmp_path / "ref"), "8.0")
    same = compare.compare(_with_sollya(_write_run(tmp_path / "a"), "8.0"), ref, TOL)
    assert not compare.failed(same) and name in [c[0] for c in same["checked"]]
    off = compare.compare(_with_sollya(_write_run(tmp_path / "b"), "8.0", 5.6e-3), ref, TOL)
    assert compare.failed(off) and _bad(off) == [name]
    # another version, or none: said, not failed; the other version's figure is a new one
    other = compare.compare(_with_sollya(_write_run(tmp_path / "c"), "9.1", 5.6e-3), ref, TOL)
    assert not compare.failed(other) and other["new"] == [name.replace("8.0", "9.1")]
    assert other["not_here"] == [(name, "made by Sollya 8.0, which this run did not have")]
    none = compare.compare(_write_run(tmp_path / "d"), ref, TOL)
    assert not compare.failed(none) and [n for n, _ in none["not_here"]] == [name]
    assert "which this run did not have" in compare.render(none)


def test_tolerances_command_refuses_an_unknown_variant_or_part(capsys):
    from experiments import tolerances

    with pytest.raises(SystemExit):
        tolerances.main(["--variants", "avx9000"])
    assert "unknown variant(s) or part(s) ['avx9000']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tolerances.main(["--parts", "05_timing"])


def test_the_tolerance_variants_include_the_ci_imitation():
    """A figure that .ci/run's second pass moves must be measured moving: its imitation's
    environment (less the Inductor cache folder, which changes no figure) is a variant."""
    import shlex

    from experiments import tolerances

    text = (compare.REPO / ".ci" / "run").read_text()
    block = re.search(r"^imitation=\((.*?)^\)", text, re.S | re.M).group(1)
    words = shlex.split("\n".join(ln.split("#")[0] for ln in block.splitlines()))
    env = dict(w.split("=", 1) for w in words)
    env.pop("TORCHINDUCTOR_CACHE_DIR")
    assert env == tolerances.VARIANTS["ci-imitation"][0]


def test_tolerances_of_one_part_keep_the_other_parts_measured_earlier(tmp_path, monkeypatch):
    # The llm part measured alone must not drop (or zero) the mnist figures' tolerances that an
    # earlier command measured from runs no longer in the work folder.
    from experiments import tolerances

    ref = tmp_path / "reference"
    monkeypatch.setattr(compare, "REFERENCE", ref)
    loss, dw = "11_llm_tasks.b1_val_change", "06_mnist_mlp.max_abs_dw_final"
    (ref / "quick").mkdir(parents=True)
    both = {"figures": {"b1_val_change": 1e-3, "seed_steps": 12}}
    (ref / "quick" / "11_llm_tasks.json").write_text(json.dumps(both))
    (ref / "quick" / "06_mnist_mlp.json").write_text(
        json.dumps({"figures": {"max_abs_dw_final": 2e-5}})
    )
    for variant, change in (("default", 1e-3), ("aten-avx2", 1.5e-3)):
        d = tmp_path / "work" / "quick" / variant
        d.mkdir(parents=True)
        (d / "llm_quick_throughput.json").write_text("{}")  # present: no step runs
        figs = {"b1_val_change": change, "seed_steps": 12}
        (d / "11_llm_tasks.json").write_text(json.dumps({"figures": figs}))
    out = tmp_path / "tolerances.json"
    earlier = {"tolerance": 4e-6, "max_difference": 2e-6, "between": ["reference", "x"]}
    out.write_text(json.dumps({"quick": {"commands": ["earlier"], "figures": {dw: earlier}}}))
    args = ["--parts", "llm", "--variants", "default,aten-avx2", "--work", str(tmp_path / "work")]
    assert tolerances.main([*args, "--out", str(out)]) == 0
    got = json.loads(out.read_text())["quick"]
    assert got["figures"][dw] == earlier and got["figures_kept_from_earlier_commands"] == 1
    assert got["figures"][loss]["tolerance"] == pytest.approx(2 * 5e-4)
    assert got["commands"][0] == "earlier" and "--parts llm" in got["commands"][1]
    assert sorted(got["variants"]) == ["aten-avx2", "default"]


def test_tolerances_measured_on_a_second_cpu_widen_the_first_cpus(tmp_path, monkeypatch):
    # A command on another CPU keeps the first CPU's runs (named variant@cpu) beside its own,
    # so each tolerance covers both machines; this CPU's earlier runs are measured again.
    from experiments import records, tolerances

    ref = tmp_path / "reference"
    monkeypatch.setattr(compare, "REFERENCE", ref)
    monkeypatch.setattr(records, "cpu_model", lambda: "CPU B")
    monkeypatch.setattr(tolerances, "has_avx512", lambda: False)
    loss = "11_llm_tasks.b1_val_change"
    (ref / "quick").mkdir(parents=True)
    (ref / "quick" / "11_llm_tasks.json").write_text(
        json.dumps({"figures": {"b1_val_change": 1.0}})
    )
    d = tmp_path / "work" / "quick" / "default"
    d.mkdir(parents=True)
    (d / "llm_quick_throughput.json").write_text("{}")  # present: no step runs
    (d / "11_llm_tasks.json").write_text(json.dumps({"figures": {"b1_val_change": 1.25}}))
    values = {"reference": 1.0, "aten-avx2": 1.5, "default": 1.0, "threads-2@CPU C": 0.5}
    first = {"tolerance": 2.0, "max_difference": 1.0, "between": [], "values": values}
    out = tmp_path / "tolerances.json"
    out.write_text(
        json.dumps({"quick": {"measured_on": {"cpu": "CPU A"}, "figures": {loss: first}}})
    )
    args = ["--parts", "llm", "--variants", "default", "--work", str(tmp_path / "work")]
    assert tolerances.main([*args, "--out", str(out)]) == 0
    got = json.loads(out.read_text())["quick"]
    assert got["figures"][loss]["values"] == {
        "reference": 1.0,
        "default": 1.25,
        "aten-avx2@CPU A": 1.5,
        "default@CPU A": 1.0,
        "threads-2@CPU C": 0.5,
    }
    assert got["figures"][loss]["tolerance"] == 2.0  # 1.5 - 0.5, twice
    assert [m["cpu"] for m in got["machines"]] == ["CPU A", "CPU B"]
    # again on CPU B: its own earlier run is not kept (measured again), CPU A's still are
    (d / "11_llm_tasks.json").write_text(json.dumps({"figures": {"b1_val_change": 1.1}}))
    assert tolerances.main([*args, "--out", str(out)]) == 0
    again = json.loads(out.read_text())["quick"]["figures"][loss]["values"]
    assert (
        again["default"] == 1.1 and again["default@CPU A"] == 1.0 and "default@CPU B" not in again
    )
    # a CPU of the same model name with AVX-512 is another machine: CPU B's runs are kept
    monkeypatch.setattr(tolerances, "has_avx512", lambda: True)
    (d / "11_llm_tasks.json").write_text(json.dumps({"figures": {"b1_val_change": 1.3}}))
    assert tolerances.main([*args, "--out", str(out)]) == 0
    got = json.loads(out.read_text())["quick"]
    assert got["figures"][loss]["values"]["default@CPU B"] == 1.1
    assert got["figures"][loss]["values"]["default"] == 1.3
    assert [m["cpu"] for m in got["machines"]] == ["CPU A", "CPU B", "CPU B (AVX-512)"]
    # --forget: the code behind the figure changed, other CPUs' old values go; this CPU's stay
    assert tolerances.main([*args, "--out", str(out), "--forget", "b1_val"]) == 0
    got = json.loads(out.read_text())["quick"]["figures"][loss]
    assert set(got["values"]) == {"reference", "default"}
    assert got["tolerance"] == pytest.approx(2 * (1.3 - 1.0))


def test_a_quick_notebook_page_says_so_first(tmp_path):
    import nbformat

    for name, quick in (("q", True), ("f", False)):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("# The title")]
        nb.metadata["papermill"] = {"parameters": {"quick": quick}}
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
    from experiments import notebooks

    pages = {p.stem: notebooks.render_html(p).read_text() for p in tmp_path.glob("*.ipynb")}
    assert 0 < pages["q"].find("Quick-mode run") < pages["q"].find("The title")
    assert "Quick-mode run" not in pages["f"]


def test_notebooks_left_out_of_reproduce_are_named_with_a_reason():
    """Every numbered notebook runs in `make reproduce` unless NOT_REPRODUCED names it and
    says why (none today); the LLM tasks' notebook runs after the llm step made its files."""
    stems = {p.stem for p in (reproduce.REPO / "notebooks").glob("[0-9]*.ipynb")}
    run = {p.stem for p in reproduce._notebooks()}
    assert run | set(reproduce.NOT_REPRODUCED) == stems
    assert not run & set(reproduce.NOT_REPRODUCED)
    assert all(len(why) > 10 for why in reproduce.NOT_REPRODUCED.values())
    assert "11_llm_tasks" in run
    names = list(reproduce.steps(quick=True))
    assert names.index("llm") < names.index("notebooks")
    # notebook 12 reads the family sweep, which the sweep step makes
    assert "12_family_sweep" in run and names.index("sweep") < names.index("notebooks")
    assert any("family.json" in " ".join(cmd) for cmd in reproduce.steps(quick=True)["sweep"])


def test_a_numerics_figure_is_never_held_tighter_than_an_exact_one():
    """A tolerance measured as 0 (no two runs here disagreed) still lets a float64 result move
    by FLOAT64_RTOL, as an exact figure may; beyond both it fails."""
    name = "12_family_sweep.exp2_frac_best_max_abs_error"
    assert compare.classify(name) == compare.NUMERICS
    ref = 1.2328382581472397e-07
    assert compare._same(compare.NUMERICS, ref * (1 + 1e-9), ref, 0.0, name)
    assert not compare._same(compare.NUMERICS, ref * (1 + 1e-3), ref, 0.0, name)
    assert compare._same(compare.NUMERICS, ref * (1 + 1e-3), ref, 2e-10, name)
    # its integer neighbours stay exact
    assert compare.classify("12_family_sweep.exp2_frac_best_ops") == compare.EXACT
