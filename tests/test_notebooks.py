"""The report's notebooks: stored clean, parameters cell first, and each runs in quick mode.

The executions run once per session (a module fixture), two at a time, each in its own
kernel on this interpreter (``turbogelu.notebooks``), writing into a temporary folder.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ProcessPoolExecutor

import nbformat
import pytest

from turbogelu import notebooks

ALL = sorted(notebooks.NOTEBOOK_DIR.glob("*.ipynb"))
# Those this test executes (sweep_point: test_sweep). 05 and 06 find no results in the fresh
# folder, so they make their own: a small `bench --quick`, `mnist all --quick`.
EXECUTED = [
    "01_tail_clamping",
    "02_irls_fitting",
    "03_estrin_evaluation",
    "04_derivative_checks",
    "05_timing",
    "06_mnist_mlp",
    "07_polynomial_family",
    "08_cells",
]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_stored_clean_with_parameters_first(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code"
    assert notebooks.PARAMETERS_TAG in first.metadata.get("tags", [])
    assert "quick" in first.source
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a cell has outputs"
            assert cell.execution_count is None, f"{path.name}: a cell has an execution count"


def test_the_executed_notebooks_exist():
    assert {p.stem for p in ALL} >= set(EXECUTED)


def _run(stem: str, tmp: str) -> str:
    notebooks.execute(stem, f"{tmp}/{stem}.ipynb", {"quick": True, "results_dir": tmp})
    return stem


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("notebooks")
    notebooks.kernel_name()
    with ProcessPoolExecutor(max_workers=2) as pool:
        errors = {}
        futures = {stem: pool.submit(_run, stem, str(tmp)) for stem in EXECUTED}
        for stem, fut in futures.items():
            try:
                fut.result()
            except Exception as exc:  # reported per notebook below
                errors[stem] = exc
    return tmp, errors


@pytest.mark.parametrize("stem", EXECUTED)
def test_quick_run_records_figures(quick_runs, stem):
    tmp, errors = quick_runs
    if stem in errors:
        raise errors[stem]
    data = json.loads((tmp / f"{stem}.json").read_text())
    assert data["notebook"] == stem
    assert data["parameters"]["quick"] is True
    figures = data["figures"]
    assert figures, "no recorded figure"
    assert any(isinstance(v, int | float) and math.isfinite(v) for v in figures.values())
    assert data["plots"], "no plot written"
    for p in data["plots"]:
        assert (tmp / "figures" / stem / p.rsplit("/", 1)[-1]).is_file()
    executed = nbformat.read(tmp / f"{stem}.ipynb", as_version=4)
    assert any(c.get("outputs") for c in executed.cells if c.cell_type == "code")


def test_record_checks_figures(tmp_path):
    path = notebooks.record("x", tmp_path, {"a": 1.5, "b": float("nan")}, {"quick": True})
    data = json.loads(path.read_text())
    assert data["figures"] == {"a": 1.5, "b": None}
    with pytest.raises(TypeError):
        notebooks.record("x", tmp_path, {"a": "text"}, {})


def test_kernelspec_runs_this_interpreter():
    import os
    import sys

    name = notebooks.kernel_name()
    root = os.environ["JUPYTER_PATH"].split(os.pathsep)[0]
    spec = json.loads((notebooks.Path(root) / "kernels" / name / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    assert spec["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(notebooks.REPO)
