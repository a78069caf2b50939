"""The sweep runner: a 2-point quick sweep, rerun without re-executing anything."""

from __future__ import annotations

import json

import pytest

from turbogelu import sweep


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
    assert res["failed"] == [] and len(res["ran"]) == 2 and res["skipped"] == []
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

    again = sweep.run(f, jobs=2, quick=True, out=out, log=lambda m: None)
    assert again["ran"] == [] and len(again["skipped"]) == 2
    assert {p: p.stat().st_mtime_ns for p in recs} == stamps
    assert {p: p.stat().st_mtime_ns for p in (out / "notebooks").glob("*.ipynb")} == nb_stamps


def test_time_spec_times_a_fitted_spec_through_poly_gelu():
    # The sweep's time column: a degree-5 GELU spec through the run-time-coefficient op; a
    # sigmoid spec (not an x/2 + even form) is refused with the reason.
    from turbogelu.approx.family_fit import fit_polyspec

    ps = fit_polyspec("gelu", "y", 2, 5, 4.0, 4.0, "float32", "remez", replay=False)
    us, note = sweep.time_spec(ps, size=4096, rounds=3, calls=2)
    assert us is not None and us > 0, note
    assert "poly_gelu" in note
    sig = fit_polyspec("sigmoid", "u", 0, 3, 5.0, 5.0, "float32", "remez", replay=False)
    us, note = sweep.time_spec(sig, size=4096, rounds=3, calls=2)
    assert us is None and "x/2 + even" in note


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
    import turbogelu.__main__ as cli

    f.write_text(json.dumps(s))
    got = {}
    table = tmp_path / "table.md"
    table.write_text("| degree |\n")
    res = {"failed": [], "table_md": table}
    monkeypatch.setattr(sweep, "run", lambda *a, **kw: got.update(kw) or res)
    assert cli.main(["sweep", str(f), "--quick", "-p", "degree=8"]) == 0
    assert got["params"] == {"degree": 8} and got["quick"] is True
    assert cli.main(["sweep", str(f), "-p", "degre=8"]) == 2
    assert "-p degre: not a point parameter" in capsys.readouterr().err
