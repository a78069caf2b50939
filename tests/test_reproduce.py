"""make reproduce's plan, and the comparison of a run against the reference run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from turbogelu import compare, reproduce


def _write_run(d, *, err=2.5e-5, ulp=1, time_us=270.0, drop=None):
    d.mkdir(parents=True, exist_ok=True)
    figs = {"max_abs_error": err, "max_ulp": ulp, "time_us_forward": time_us}
    if drop:
        figs.pop(drop)
    nb = {"notebook": "01_x", "figures": figs, "machine": {"cpu": "CPU A", "logical_cpus": 2}}
    (d / "01_x.json").write_text(json.dumps(nb))
    rows = [{"name": "GELU D5", "ls": {"max_abs_error": 1.035e-3}, "best": {"max_abs_error": err}}]
    (d / "table2.json").write_text(json.dumps(rows))
    return d


def test_identical_runs_match(tmp_path):
    a, b = _write_run(tmp_path / "a"), _write_run(tmp_path / "b")
    res = compare.compare(a, b)
    assert [x[3] for x in res["accuracy"]] == [True] * 4
    assert [t[0] for t in res["times"]] == ["01_x.time_us_forward"]
    assert "4 of 4 match" in compare.render(res)


def test_accuracy_difference_fails_time_difference_does_not(tmp_path):
    ref = _write_run(tmp_path / "ref")
    slower = _write_run(tmp_path / "slow", time_us=540.0)
    assert compare.main(["--results", str(slower), "--reference", str(ref)]) == 0
    worse = _write_run(tmp_path / "worse", err=2.6e-5)
    res = compare.compare(worse, ref)
    assert sorted(n for n, *_, ok in res["accuracy"] if not ok) == [
        "01_x.max_abs_error",
        "table2.GELU D5.best",
    ]
    assert compare.main(["--results", str(worse), "--reference", str(ref)]) == 1
    # within the stated tolerance of table2 (1e-6 relative) but not the default (1e-9)
    near = _write_run(tmp_path / "near", err=2.5e-5 * (1 + 1e-7))
    bad = {n for n, *_, ok in compare.compare(near, ref)["accuracy"] if not ok}
    assert bad == {"01_x.max_abs_error"}


def test_missing_figure_fails_and_a_new_one_is_listed(tmp_path):
    ref = _write_run(tmp_path / "ref", drop="max_ulp")
    new = _write_run(tmp_path / "new")
    assert compare.compare(new, ref)["new"] == ["01_x.max_ulp"]
    res = compare.compare(ref, new)
    assert res["missing"] == ["01_x.max_ulp"]
    assert "MISSING 01_x.max_ulp" in compare.render(res)


def test_save_copies_the_run(tmp_path):
    run = _write_run(tmp_path / "results")
    (run / "figures" / "01_x").mkdir(parents=True)
    (run / "figures" / "01_x" / "a.png").write_bytes(b"png")
    ref = tmp_path / "results" / "reference" / "full"
    assert compare.main(["--results", str(run), "--reference", str(ref), "--save"]) == 0
    assert (ref / "01_x.json").is_file() and (ref / "figures" / "01_x" / "a.png").is_file()
    assert compare.compare(run, ref)["missing"] == []


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
    assert "sweeps/default/table.md" in saved and "01_x.json" in saved
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
    import turbogelu.__main__ as cli

    ran = []
    monkeypatch.setattr(cli, "_run_command", lambda args: ran.append(args.command) or 0)
    plan = reproduce.steps(quick)
    assert list(plan) == ["table2", "accuracy", "bench", "mnist", "notebooks", "sweep", "paper"]
    assert len(plan["notebooks"]) == len(reproduce._notebooks()) >= 5
    for cmds in plan.values():
        for cmd in cmds:
            assert cmd[:3] == [sys.executable, "-m", "turbogelu"]
            assert cli.main(cmd[3:]) == 0, cmd
    assert len(ran) == sum(len(c) for c in plan.values())


def test_unknown_step_is_a_usage_error():
    proc = subprocess.run(
        [sys.executable, "-m", "turbogelu.reproduce", "--only", "nope"],
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
        "01_x.json",
        "machine.json",
        "table2.json",
    ]
    assert compare.compare(run, ref)["missing"] == []
