"""The sweep runner: a 2-point quick sweep, rerun without re-executing anything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, subprocess_env

from experiments import sweep


def test_points_and_ids():
    s = {
        "name": "t",
        "fixed": {"target": "gelu"},
        "grid": {"fit_range": [4.0, 4.389], "degree": [6, 8], "method": ["remez+search"]},
        "quick_grid": {"degree": [6]},
    }
    pts = sweep.points(s)
    assert len(pts) == 4 and pts[0] == {
        "target": "gelu",
        "fit_range": 4.0,
        "degree": 6,
        "method": "remez+search",
    }
    assert len(sweep.points(s, quick=True)) == 2
    ids = {sweep.point_id(p) for p in pts}
    assert len(ids) == 4 and all("/" not in i and " " not in i for i in ids)


def test_load_rejects_unknown_keys(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"name": "x", "grid": {"degree": [4]}, "gird": {}}))
    with pytest.raises(ValueError, match="unknown keys"):
        sweep.load(f)
    f.write_text(json.dumps({"name": "x", "grid": {"degree": []}}))
    with pytest.raises(ValueError, match="non-empty"):
        sweep.load(f)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"name": "x", "grid": [6]}', "'grid' must be an object"),
        ('{"name": "x", "grid": {"degree": [6]}, "fixed": 3}', "'fixed' must be an object"),
        ('{"name": 7, "grid": {"degree": [6]}}', "'name' must be a string"),
        ("[1, 2]", "a sweep file is a JSON object"),
        ('{"name": "x", "grid": {"degree": [6]},', "not valid JSON"),
    ],
)
def test_a_malformed_sweep_file_is_an_error_naming_it(tmp_path, text, message):
    f = tmp_path / "bad.json"
    f.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        sweep.load(f)
    assert str(f) in str(info.value)
    with pytest.raises(ValueError, match="cannot read the sweep file"):
        sweep.load(tmp_path / "missing.json")
    # and on the command line: the message and exit status 2, no traceback
    import experiments.cli as cli

    assert cli.main(["sweep", str(f)]) == 2


def test_a_second_runner_on_one_folder_is_refused(tmp_path, capsys):
    d = tmp_path / "out"
    with sweep.runner_lock(d):
        assert (d / sweep.LOCK_NAME).read_text() == f"pid {os.getpid()}\n"
        with pytest.raises(sweep.Busy, match=f"another sweep runner \\(pid {os.getpid()}\\)"):
            with sweep.runner_lock(d):
                pass
    assert not (d / sweep.LOCK_NAME).exists()  # gone with its runner
    with sweep.runner_lock(d):  # and free again
        pass


_ORPHAN = """
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from experiments import sweep

d, pids = Path(sys.argv[1]), Path(sys.argv[2])

def work(_):
    pids.write_text(str(os.getpid()))
    time.sleep(120)

with sweep.runner_lock(d):
    pool = ProcessPoolExecutor(1, initializer=sweep._die_with_parent, initargs=(os.getpid(),))
    pool.submit(work, 0)
    time.sleep(120)
"""


def test_a_killed_runner_takes_its_workers_and_its_lock_with_it(tmp_path):
    """Killing the runner left its worker running the queued points, and a rerun meanwhile
    ran them twice: the workers now die with the runner, and the lock goes with them."""
    d, pids = tmp_path / "out", tmp_path / "worker.pid"
    runner = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN, str(d), str(pids)], cwd=ROOT, env=subprocess_env()
    )
    try:
        for _ in range(600):
            if pids.is_file() and pids.read_text():
                break
            time.sleep(0.1)
        worker = int(pids.read_text())
        with pytest.raises(sweep.Busy):  # held by the runner (and its worker)
            with sweep.runner_lock(d):
                pass
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(30)
    for _ in range(100):  # SIGTERM reaches the worker as its parent dies
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the worker outlived its runner")
    with sweep.runner_lock(d):  # the kernel dropped the lock with its holders
        pass


def test_default_sweep_file_loads():
    s = sweep.load(sweep.DEFAULT_SWEEP)
    assert len(sweep.points(s)) >= 50
    assert len(sweep.points(s, quick=True)) <= 8


def test_two_point_sweep_resumes(tmp_path):
    f = tmp_path / "two.json"
    f.write_text(
        json.dumps(
            {
                "name": "two",
                "fixed": {"target": "gelu", "method": "remez", "fmt": "float32"},
                "grid": {"fit_range": [4.389], "degree": [6, 8]},
            }
        )
    )
    out = tmp_path / "out"
    res = sweep.run(f, jobs=2, quick=True, out=out, log=lambda m: None)
    assert res["failed"] == {} and len(res["ran"]) == 2 and res["skipped"] == []
    assert res["rows"] == 2
    recs = sorted((out / "points").glob("*.json"))
    assert len(recs) == 2
    stamps = {p: p.stat().st_mtime_ns for p in recs}
    nb_stamps = {p: p.stat().st_mtime_ns for p in (out / "notebooks").glob("*.ipynb")}
    rows = [json.loads(p.read_text()) for p in recs]
    by_degree = {r["degree"]: r for r in rows}
    assert by_degree[8]["max_abs_error"] < by_degree[6]["max_abs_error"]
    assert by_degree[8]["ops_horner"] > by_degree[6]["ops_horner"]
    assert by_degree[8]["depth_estrin"] < by_degree[8]["depth_horner"]
    assert (out / "table.csv").read_text().count("\n") == 3
    assert (out / "pareto.png").stat().st_size > 0
    assert "front" in (out / "table.md").read_text()

    assert {r["code_version"] for r in rows} == {
        sweep.code_version(sweep.notebooks.REPO / "notebooks/sweep_point.ipynb")
    }

    again = sweep.run(f, jobs=2, quick=True, out=out, log=lambda m: None)
    assert again["ran"] == [] and len(again["skipped"]) == 2
    assert {p: p.stat().st_mtime_ns for p in recs} == stamps
    assert {p: p.stat().st_mtime_ns for p in (out / "notebooks").glob("*.ipynb")} == nb_stamps

    # a record made by other code (another stamp, or none: before stamps) runs again
    old = recs[0]
    old.write_text(json.dumps({**json.loads(old.read_text()), "code_version": "older"}))
    lines = []
    third = sweep.run(f, jobs=1, quick=True, out=out, log=lines.append)
    assert third["ran"] == [old.stem] and third["skipped"] == [recs[1].stem]
    assert "(1 made by other code or failed)" in lines[0]
    assert json.loads(old.read_text())["code_version"] == rows[0]["code_version"]


def test_time_spec_times_every_form_the_kernels_run():
    # The sweep's time column: a degree-5 GELU spec through poly_gelu, a sigmoid one through
    # poly_family; an exp2 fraction spec (no run-time kernel for its form) says why not.
    from turbogelu.approx.family_fit import fit_polyspec

    ps = fit_polyspec("gelu", "y", 2, 5, 4.0, 4.0, "float32", "remez", replay=False)
    us, note = sweep.time_spec(ps, size=4096, rounds=3, calls=2)
    assert us is not None and us > 0, note
    assert "poly_gelu" in note
    sig = fit_polyspec("sigmoid", "u", 1, 3, 5.0, 5.0, "float32", "remez", replay=False)
    us, note = sweep.time_spec(sig, size=4096, rounds=3, calls=2)
    assert us is not None and us > 0 and "poly_family" in note, note
    e2 = fit_polyspec("exp2_frac", degree=3, fit_interval=1.0, fmt="float32", replay=False)
    us, note = sweep.time_spec(e2, size=4096, rounds=3, calls=2)
    assert us is None and "no run-time kernel runs this form" in note


def test_explicit_parameters_win_over_the_quick_grid(tmp_path, monkeypatch, capsys):
    s = {
        "name": "t",
        "fixed": {"target": "gelu"},
        "grid": {"fit_range": [4.0, 4.5], "degree": [6, 8], "method": ["remez"]},
        "quick_grid": {"degree": [6]},
    }
    # -p degree=8 with --quick: every point has degree 8 (the quick grid said 6)
    pts = sweep.points(sweep.fix(s, {"degree": 8}), quick=True)
    assert [p["degree"] for p in pts] == [8, 8] and {p["fit_range"] for p in pts} == {4.0, 4.5}
    # a file may not leave it open either: a parameter both fixed and swept is refused
    f = tmp_path / "s.json"
    f.write_text(json.dumps({**s, "fixed": {"target": "gelu", "degree": 8}}))
    with pytest.raises(ValueError, match=r"\['degree'\] both fixed and in a grid"):
        sweep.load(f)
    # the command line: -p values reach the run, checked against the notebook's parameters
    import experiments.cli as cli

    f.write_text(json.dumps(s))
    got = {}
    table = tmp_path / "table.md"
    table.write_text("| degree |\n")
    res = {"failed": {}, "table_md": table}
    monkeypatch.setattr(sweep, "run", lambda *a, **kw: got.update(kw) or res)
    assert cli.main(["sweep", str(f), "--quick", "-p", "degree=8"]) == 0
    assert got["params"] == {"degree": 8} and got["quick"] is True
    assert cli.main(["sweep", str(f), "-p", "degre=8"]) == 2
    assert "-p degre: not a point parameter" in capsys.readouterr().err


def test_code_version_covers_the_timing_loop(monkeypatch):
    # A point's time_us comes from bench_timing.time_interleaved: changing how rows are timed
    # must run the points again, not keep times made the old way.
    nb = sweep.notebooks.REPO / "notebooks/sweep_point.ipynb"
    before = sweep.code_version(nb)
    timing = (sweep.notebooks.REPO / "experiments/bench_timing.py").resolve()
    real = Path.read_bytes

    def read_bytes(self):
        data = real(self)
        return data + b"# changed\n" if self.resolve() == timing else data

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert sweep.code_version(nb) != before


def test_grid_blocks_give_each_function_its_own_ranges(tmp_path):
    s = {
        "name": "b",
        "fixed": {"fmt": "float32"},
        "grid": [
            {"target": ["gelu"], "fit_range": [4.0, 4.5], "degree": [6]},
            {"target": ["sigmoid"], "fit_range": [10.0], "degree": [6, 9]},
            {"target": ["gelu"], "fit_range": [4.0], "degree": [6]},  # given twice: kept once
        ],
        "quick_grid": [{"fit_range": [4.0]}, {"degree": [9]}, {}],
    }
    full = [(p["target"], p["fit_range"], p["degree"]) for p in sweep.points(s)]
    assert full == [("gelu", 4.0, 6), ("gelu", 4.5, 6), ("sigmoid", 10.0, 6), ("sigmoid", 10.0, 9)]
    quick = [(p["target"], p["fit_range"], p["degree"]) for p in sweep.points(s, quick=True)]
    assert quick == [("gelu", 4.0, 6), ("sigmoid", 10.0, 9)]
    fixed = sweep.points(sweep.fix(s, {"degree": 12}))
    assert {p["degree"] for p in fixed} == {12} and len(fixed) == 3
    f = tmp_path / "s.json"
    for bad, message in [
        ({**s, "quick_grid": [{}]}, "one entry per block of grid"),
        ({**s, "grid": []}, "non-empty list"),
        ({**s, "grid": [{"degree": 6}]}, "grid.degree must be a non-empty list"),
    ]:
        f.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=message):
            sweep.load(f)


def test_the_family_sweeps_cover_every_function_with_programs_of_its_own():
    own = {"gelu", "gelu_tanh", "sigmoid", "tanh", "silu", "softplus", "exp2_frac"}
    for name in ("family", "family_large"):
        s = sweep.load(sweep.SWEEP_DIR / f"{name}.json")
        for quick in (False, True):
            assert {p["target"] for p in sweep.points(s, quick)} == own, (name, quick)
    assert len(sweep.points(sweep.load(sweep.SWEEP_DIR / "family_large.json"))) > 3000


def test_a_point_says_what_it_cannot_compute_for_its_target():
    rec = sweep.measure_point("exp2_frac", 1.0, 4, "remez", "float32", quick=True)
    assert rec["bf16_max_ulp"] is None and rec["fp16_max_ulp"] is None and rec["time_us"] is None
    assert set(rec["not_computed"]) == {"bf16_max_ulp", "fp16_max_ulp", "time_us"}
    assert "no correctly rounded bfloat16 reference" in rec["not_computed"]["bf16_max_ulp"]
    sig = sweep.measure_point("sigmoid", 10.0, 6, "remez", "float32", variable="u", quick=True)
    assert sig["not_computed"] == {} and sig["variable"] == "u" and sig["time_us"] > 0
    assert sig["bf16_max_ulp"] >= 0 and sig["fp16_max_ulp"] >= sig["bf16_max_ulp"]
    silu = sweep.measure_point("silu", 12.0, 6, "remez", "float32", variable="u", time_it=False)
    assert silu["program"] == "turbogelu"  # the kernels' sign-keeping order in |x|
    # exp2's fraction in f itself, as the exp2 kernels take it: timed inside 2^n P(f)
    e2 = sweep.measure_point("exp2_frac", 1.0, 4, "remez", "float32", shift=False, quick=True)
    assert e2["shift"] is False and e2["time_us"] > 0 and "poly_family" in e2["time_note"]
