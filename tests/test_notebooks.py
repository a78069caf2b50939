"""The report's notebooks: stored clean, parameters cell first, and each runs in quick mode.

The executions run once per session (a module fixture), two at a time, each in its own
kernel on this interpreter (``turbogelu.notebooks``), writing into a temporary folder.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
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


# An output that is only an object's repr: a figure that was never drawn as an image
# ("<Figure size 840x504 with 1 Axes>"), a matplotlib artist, or any "<... at 0x...>".
_BARE_REPR = re.compile(r"^\[?<(Figure|matplotlib|Axes|[\w.]+ object at 0x)")
_RICH = ("image/png", "image/svg+xml", "image/jpeg", "text/html", "text/markdown")


def _images_and_bare_reprs(nb) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(cell index, sha1 of the PNG) of every image shown, and (cell index, text) of every
    output shown only as a bare object repr."""
    images, bare = [], []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                images.append((i, hashlib.sha1(base64.b64decode(data["image/png"])).hexdigest()))
            text = data.get("text/plain", "")
            if text and not any(k in data for k in _RICH) and _BARE_REPR.match(text.strip()):
                bare.append((i, text.strip()[:80]))
    return images, bare


@pytest.mark.parametrize("stem", EXECUTED)
def test_quick_run_shows_each_figure_once_and_no_bare_repr(quick_runs, stem):
    tmp, errors = quick_runs
    if stem in errors:
        raise errors[stem]
    executed = nbformat.read(tmp / f"{stem}.ipynb", as_version=4)
    images, bare = _images_and_bare_reprs(executed)
    assert bare == [], f"outputs shown as a bare repr instead of what they are: {bare}"
    shown = [h for _, h in images]
    twice = sorted({i for i, h in images if shown.count(h) > 1})
    assert not twice, f"the same image shown more than once, in cells {twice}"
    plots = json.loads((tmp / f"{stem}.json").read_text())["plots"]
    assert len(images) == len(plots), f"{len(plots)} plots written, {len(images)} images shown"


def test_the_figure_check_catches_a_repr_and_a_double():
    png = base64.b64encode(b"\x89PNG fake").decode()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("fig"),
        nbformat.v4.new_code_cell("fig"),
    ]
    nb.cells[0].outputs = [
        nbformat.v4.new_output(
            "execute_result", {"text/plain": "<Figure size 840x504 with 1 Axes>"}, execution_count=1
        )
    ]
    image = {"image/png": png, "text/plain": "<Figure size 840x504 with 1 Axes>"}
    nb.cells[1].outputs = [
        nbformat.v4.new_output("display_data", image),
        nbformat.v4.new_output("execute_result", image, execution_count=2),
    ]
    images, bare = _images_and_bare_reprs(nb)
    assert bare == [(0, "<Figure size 840x504 with 1 Axes>")]
    assert [i for i, _ in images] == [1, 1] and images[0][1] == images[1][1]
