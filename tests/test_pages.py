"""README.md and docs/*.md are generated from docs/templates/ and the reference run
(experiments/pages.py): they must say what results/reference/full/ says, with no number typed in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from experiments import pages

ROOT = Path(__file__).resolve().parents[1]
README_TEMPLATE = pages.TEMPLATES / "README.md"
README_MAX_LINES = 200  # issue 35: a front page, not a log


def test_every_page_is_what_its_template_and_the_reference_give():
    stale = pages.stale()
    assert not stale, (
        f"out of date: {[str(p.relative_to(ROOT)) for p in stale]}; run "
        "`python -m experiments.pages` (after changing a template or the reference)"
    )


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    first_screen = "\n".join(lines[:60])
    assert "make test" in first_screen and "make reproduce" in first_screen


def test_every_number_of_a_page_comes_from_a_placeholder():
    assert pages.templates(), "no templates in docs/templates"
    for template in pages.templates():
        pages.render(template)  # raises ValueError naming a number no placeholder produced


def test_a_typed_number_fails_the_build(tmp_path):
    template = tmp_path / "typed.md"
    template.write_text("GELU is 2.3 times faster.\n")
    with pytest.raises(ValueError, match=r"line 1: 2\.3"):
        pages.render(template)


def test_a_changed_reference_changes_the_readme(tmp_path):
    # a figure of the reference moved: the page no longer matches, so the test above would fail
    ref = tmp_path / "full"
    shutil.copytree(pages.REFERENCE, ref, ignore=shutil.ignore_patterns("*.png", "report"))
    timing = ref / "05_timing.json"
    data = json.loads(timing.read_text())
    data["figures"]["forward_float32_speedup_vs_torch_exact"] += 1.0
    timing.write_text(json.dumps(data))
    before = pages.render(README_TEMPLATE)
    after = pages.render(README_TEMPLATE, ref)
    assert before != after
    assert before == (ROOT / "README.md").read_text()


def test_figures_link_to_the_reference_files(tmp_path, monkeypatch):
    monkeypatch.setattr(pages, "ROOT", tmp_path)  # a page under tmp_path/docs
    template = tmp_path / "t" / "fig.md"
    template.parent.mkdir()
    template.write_text("{{ figure: results/bench/bars_forward.png | bars }}\n")
    text = pages.render(template)
    link = text.split("](", 1)[1].split(")", 1)[0]
    assert (tmp_path / "docs" / link).resolve() == (pages.REFERENCE / "bench" / "bars_forward.png")


def test_check_command_reports_a_stale_page(tmp_path, monkeypatch, capsys):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "page.md").write_text("machine: {{ machine.cpu }}\n")
    monkeypatch.setattr(pages, "TEMPLATES", templates)
    monkeypatch.setattr(pages, "ROOT", tmp_path)
    assert pages.main(["--check"]) == 1
    assert "out of date: docs/page.md" in capsys.readouterr().out
    assert pages.main([]) == 0
    assert pages.main(["--check"]) == 0
    assert "machine: " in (tmp_path / "docs" / "page.md").read_text()


def test_the_readme_example_runs(tmp_path):
    # the front page's example is what a new user pastes first: it must run as written
    import re
    import subprocess
    import sys

    from conftest import subprocess_env

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks, "README.md has no python example"
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "'program'" in proc.stdout  # cpu_program() printed
