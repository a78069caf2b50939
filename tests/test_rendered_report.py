"""The rendered report committed beside a reference run (experiments/rendered_report.py):
made from a run's executed notebooks and paper, each image stored once, tied to the result
files of the reference it sits in."""

from __future__ import annotations

import io
import json
from pathlib import Path

import nbformat
import pytest

from experiments import compare, rendered_report

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"


def _png(colour: str, size=(40, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def _executed_notebook(path: Path, text: str, png: bytes) -> None:
    import base64

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('hello'); plot()")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=text),
        nbformat.v4.new_output(
            "display_data", data={"image/png": base64.b64encode(png).decode(), "text/plain": "x"}
        ),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# A question"), cell]
    nbformat.write(nb, path)


@pytest.fixture
def run(tmp_path):
    """A run's reports/ (two notebooks and a paper sharing one figure) and its reference."""
    reports, ref = tmp_path / "reports", tmp_path / "ref"
    (reports / "notebooks").mkdir(parents=True)
    (reports / "paper" / "figures").mkdir(parents=True)
    ref.mkdir()
    shared = _png("red")
    _executed_notebook(reports / "notebooks" / "01_first.ipynb", "one\n", shared)
    _executed_notebook(reports / "notebooks" / "02_second.ipynb", "two\n", _png("blue"))
    (reports / "paper" / "figures" / "bars.png").write_bytes(shared)
    (reports / "paper" / "paper.md").write_text("# Paper\n\n![Figure 1: bars](figures/bars.png)\n")
    (reports / "paper" / "paper.html").write_text('<img src="figures/bars.png" />')
    (ref / "01_first.json").write_text('{"figures": {"a": 1.5}}\n')
    (ref / "bench.jsonl").write_text('{"x": 1}\n')
    return reports, ref


def test_the_report_renders_every_notebook_and_the_paper(run):
    reports, ref = run
    out = rendered_report.write(reports, ref)
    assert out == ref / "report"
    first = (out / "notebooks" / "01_first.md").read_text()
    assert "# A question" in first and "one" in first and "print('hello')" in first
    assert "hello" in (out / "notebooks" / "02_second.md").read_text()
    assert "![Figure 1: bars](figures/" in (out / "paper.md").read_text()
    assert 'src="figures/' in (out / "paper.html").read_text()
    assert rendered_report.problems(ref) == []


def test_an_image_shown_twice_is_stored_once(run):
    reports, ref = run
    out = rendered_report.write(reports, ref)
    stored = sorted(p.name for p in (out / "figures").iterdir())
    assert len(stored) == 2, stored  # red (a notebook and the paper) and blue
    paper_link = (out / "paper.md").read_text().split("](")[1].split(")")[0]
    notebook_md = (out / "notebooks" / "01_first.md").read_text()
    assert f"../{paper_link}" in notebook_md


def test_a_large_figure_is_stored_smaller(run, monkeypatch):
    reports, ref = run
    monkeypatch.setattr(rendered_report, "MAX_PNG_BYTES", 200)
    big = _png("green", size=(800, 600))
    (reports / "paper" / "figures" / "big.png").write_bytes(big)
    out = rendered_report.write(reports, ref)
    assert (out / "figures" / "big.png").stat().st_size < len(big)


def test_the_report_belongs_to_its_run_only(run):
    reports, ref = run
    rendered_report.write(reports, ref)
    (ref / "01_first.json").write_text('{"figures": {"a": 2.5}}\n')
    (ref / "07_new.json").write_text("{}\n")
    (ref / "bench.jsonl").unlink()
    found = "\n".join(rendered_report.problems(ref))
    assert "01_first.json: changed" in found
    assert "07_new.json: new" in found
    assert "bench.jsonl: absent" in found


def test_a_missing_document_or_image_is_found(run):
    reports, ref = run
    out = rendered_report.write(reports, ref)
    (out / "notebooks" / "02_second.md").unlink()
    for png in (out / "figures").glob("*.png"):
        png.unlink()
    found = "\n".join(rendered_report.problems(ref))
    assert "02_second.md: missing" in found
    assert "links a missing image" in found


def test_a_run_without_notebooks_or_paper_is_refused(run):
    reports, ref = run
    (reports / "paper" / "paper.md").unlink()
    with pytest.raises(FileNotFoundError, match="make reproduce writes both"):
        rendered_report.write(reports, ref)


def test_the_size_limit_holds(run, monkeypatch):
    reports, ref = run
    monkeypatch.setattr(rendered_report, "MAX_BYTES", 1000)
    with pytest.raises(ValueError, match="over the 1000"):
        rendered_report.write(reports, ref)


def test_saving_a_reference_renders_its_report(run, tmp_path):
    reports, _ = run
    results = tmp_path / "results"
    results.mkdir()
    (results / "01_first.json").write_text('{"figures": {"a": 1.5}}\n')
    ref = tmp_path / "reference" / "full"
    compare.save(results, ref, reports_dir=reports)
    assert (ref / "report" / "manifest.json").is_file()
    manifest = json.loads((ref / "report" / "manifest.json").read_text())
    assert "01_first.json" in manifest["results_sha256"]
    assert "machine.json" not in manifest["results_sha256"]
    assert rendered_report.problems(ref) == []


# The committed references: each rendered report belongs to the run it sits beside. The full
# reference gains its report when it is next regenerated (issue 35: after issue 20 lands).
COMMITTED = sorted(p.parent for p in REFERENCE.glob(f"*/{rendered_report.FOLDER}"))


@pytest.mark.parametrize("reference", COMMITTED, ids=lambda p: p.name)
def test_a_committed_report_belongs_to_its_reference(reference):
    assert rendered_report.problems(reference) == []


def test_saving_without_a_report_keeps_the_old_reference(run, tmp_path):
    reports, ref = run
    (reports / "paper" / "paper.md").unlink()
    with pytest.raises(FileNotFoundError):
        compare.save(tmp_path, ref, reports_dir=reports)
    assert (ref / "01_first.json").is_file()


def test_an_image_the_reference_holds_is_linked_not_copied(run):
    reports, ref = run
    (ref / "figures" / "01_first").mkdir(parents=True)
    (ref / "figures" / "01_first" / "saved.png").write_bytes(_png("red"))  # the shared image
    out = rendered_report.write(reports, ref)
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["02_second_1_1.png"]
    assert "](../figures/01_first/saved.png)" in (out / "paper.md").read_text()
    assert "](../../figures/01_first/saved.png)" in (out / "notebooks" / "01_first.md").read_text()
    assert 'src="../figures/01_first/saved.png"' in (out / "paper.html").read_text()
    assert rendered_report.problems(ref) == []
