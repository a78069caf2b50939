"""The sweep on a Dask cluster (issue 39): a two-worker LocalCluster runs a small family sweep
while one worker is killed (a deterministic hook, not a timer), gives the process pool's exact
figures bit for bit, and a second run resumes without recomputing; a worker with other code is
refused; a failed point is recorded with its error, shown in the table and run again later;
times of two kinds of machine are not put on one front."""

from __future__ import annotations

import json

import pytest

from experiments import sweep

# Everything a point computes but its times and the machine that ran it.
NOT_EXACT = {"time_us", "time_note", "fit_seconds", "machine", "code_version"}

FAMILY = {
    "name": "family-test",
    "fixed": {"method": "remez", "fmt": "float32", "degree": 4, "fit_range": 5.0},
    "grid": {"target": ["gelu", "sigmoid", "tanh"]},
}


def _exact(rec: dict) -> dict:
    """A record without its times and machine (the spec's meta.seconds is the fit's time)."""
    out = {k: v for k, v in rec.items() if k not in NOT_EXACT}
    spec = json.loads(json.dumps(out["spec"]))
    spec["meta"].pop("seconds")
    return {**out, "spec": spec}


def _records(out) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "points").glob("*.json"))}


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep_pool")
    f = d / "family.json"
    f.write_text(json.dumps(FAMILY))
    res = sweep.run(f, jobs=2, quick=True, out=d / "out", log=lambda m: None, progress=False)
    assert res["failed"] == {} and len(res["ran"]) == 3
    return f, _records(d / "out")


def test_a_local_cluster_survives_a_killed_worker_and_matches_the_pool(pool_run, tmp_path):
    f, by_pool = pool_run
    out, marker = tmp_path / "out", tmp_path / "died"
    victim = sweep.point_id({**FAMILY["fixed"], "target": "sigmoid"})
    lines: list[str] = []
    res = sweep.run(f, quick=True, out=out, log=lines.append, progress=False,
                    cluster="local:2", die_once=(victim, str(marker)))  # fmt: skip
    assert marker.is_file(), "the hook did not kill the worker"
    assert any("its worker died; running it once more" in m for m in lines), lines
    assert res["failed"] == {} and sorted(res["ran"]) == sorted(by_pool)
    by_cluster = _records(out)
    assert set(by_cluster) == set(by_pool)
    for pid, rec in by_cluster.items():
        # the exact figures: the same bits (JSON floats round-trip exactly)
        assert _exact(rec) == _exact(by_pool[pid]), pid
        assert rec["machine"]["kind"] and rec["machine"]["host"]
        assert (out / "notebooks" / f"{pid}.ipynb").is_file()
    assert (out / "table.md").read_text().count("| ok |") == 3
    # a second run resumes: nothing recomputed, nothing rewritten
    stamps = {p: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")}
    again = sweep.run(f, quick=True, out=out, log=lambda m: None, progress=False,
                      cluster="local:2")  # fmt: skip
    assert again["ran"] == [] and sorted(again["skipped"]) == sorted(by_pool)
    assert {p: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")} == stamps


def test_a_worker_with_other_code_is_refused():
    with pytest.raises(sweep.VersionMismatch, match="install the runner's commit"):
        sweep.run_point("notebooks/sweep_point.ipynb", {"target": "gelu"}, "not-this-code")

    class Client:  # what _check_workers asks of a distributed.Client
        def run(self, fn, *args):
            return {"tcp://a:1": fn(*args), "tcp://b:2": "older"}

    version = sweep.code_version(sweep.notebooks.REPO / "notebooks/sweep_point.ipynb")
    with pytest.raises(sweep.VersionMismatch, match=r"\['tcp://b:2'\]"):
        sweep._check_workers(Client(), "notebooks/sweep_point.ipynb", version)


def test_a_failed_point_is_in_the_table_and_runs_again(pool_run, tmp_path):
    _, by_pool = pool_run
    good = next(iter(by_pool))
    points = tmp_path / "points"
    points.mkdir()
    (points / f"{good}.json").write_text(json.dumps(by_pool[good]))
    stamp = by_pool[good]["code_version"]
    bad = {**FAMILY["fixed"], "target": "tanh", "status": "failed",
           "error": "KilledWorker: died twice", "code_version": stamp}  # fmt: skip
    (points / "bad.json").write_text(json.dumps(bad))
    res = sweep.aggregate(sorted(points.glob("*.json")), tmp_path, title="t")
    table = (tmp_path / "table.md").read_text()
    assert "| failed | KilledWorker: died twice |" in table
    front = json.loads((tmp_path / "front.json").read_text())
    assert front["failed"] == ["bad"] and "bad" not in front["front"]
    assert res["rows"] == 2
    assert sweep._finished(points / "bad.json") is None  # not done: the next run retries it
    assert sweep._finished(points / f"{good}.json") == by_pool[good]["code_version"]


def test_times_of_two_kinds_of_machine_are_not_one_front():
    def row(i, kind, us, err):
        return {"id": f"p{i}", "machine": kind, "time_us": us, "max_abs_error": err}

    # the fast machine's slow point would be dominated by the other machine's fast ones
    rows = [row(0, "A", 10.0, 1e-3), row(1, "A", 20.0, 1e-4), row(2, "B", 5.0, 1e-2),
            row(3, "B", 15.0, 1e-3)]  # fmt: skip
    fronts = sweep.time_fronts(rows)
    assert {k: [r["id"] for r in v] for k, v in fronts.items()} == {
        "A": ["p0", "p1"],
        "B": ["p2", "p3"],
    }


def test_the_cluster_argument_is_checked():
    assert sweep.parse_cluster("local", jobs=3) == 3
    assert sweep.parse_cluster("local:2") == 2
    for bad in ("remote", "local:", "local:0", "local:x"):
        with pytest.raises(ValueError, match="local or local:N"):
            sweep.parse_cluster(bad)


def test_ctrl_c_cancels_the_pending_points_and_keeps_the_finished_records(
    pool_run, tmp_path, monkeypatch
):
    f, by_pool = pool_run
    out = tmp_path / "out"
    real = sweep.write_point

    def write_then_interrupt(path, record):  # Ctrl-C just after the first record lands
        real(path, record)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "write_point", write_then_interrupt)
    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        sweep.run(f, quick=True, out=out, log=lines.append, progress=False, cluster="local:1")
    assert any("interrupted" in m for m in lines), lines
    kept = _records(out)
    assert len(kept) == 1 and all(_exact(r) == _exact(by_pool[p]) for p, r in kept.items())
    monkeypatch.setattr(sweep, "write_point", real)
    rest = sweep.run(f, jobs=2, quick=True, out=out, log=lambda m: None, progress=False)
    assert rest["skipped"] == list(kept) and len(rest["ran"]) == 2  # the lock went too


def test_the_docs_say_how_to_run_on_n_machines_and_what_is_tested():
    """Issue 39, item 4: the README points to the page that says how to run on a Dask cluster
    or a batch cluster, and what was tested here and what was not."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert "docs/sweeps.md" in (root / "README.md").read_text()
    page = (root / "docs" / "sweeps.md").read_text()
    for needle in ("--scheduler", "dask scheduler", "dask worker", "dask-jobqueue",
                   "LocalCluster", "Not tested: several machines"):  # fmt: skip
        assert needle in page, needle
