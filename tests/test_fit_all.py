"""One fit command for every committed spec (issue 36, item 4): ``python -m turbogelu fit --all``
(``make fit``) runs a step per kind of spec, and together the steps own every file under
``data/specs/``, each once. Each step's refit is checked against its committed files by the
kind's own tests (test_fit, test_cells, test_family_cells, test_packed, test_family_programs,
test_exp2_programs); running them all here would repeat those minutes."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from turbogelu.approx import codegen, fit_all
from turbogelu.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]


def test_the_steps_own_every_committed_spec_once():
    owned = [p.resolve() for step in fit_all.STEPS for p in step.paths()]
    assert [p for p, n in Counter(owned).items() if n > 1] == []
    committed = [p.resolve() for p in fit_all.committed_specs()]
    assert sorted(owned) == sorted(committed)
    assert len(committed) >= 20  # GELU 2, cells 5, packed 4, family 7, exp2 2


def test_make_fit_is_the_one_command():
    recipe = re.search(r"^fit:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)[1]
    assert [line.strip() for line in recipe.splitlines()] == [
        "$(VPY) -m turbogelu fit --all $(if $(FORCE),--force)"
    ]


def test_list_names_every_file(capsys):
    assert cli(["fit", "--list"]) == 0
    listed = re.findall(r"^  (data/specs/\S+\.json)$", capsys.readouterr().out, re.M)
    assert sorted((ROOT / p).resolve() for p in listed) == sorted(
        p.resolve() for p in fit_all.committed_specs()
    )


def test_all_takes_no_fit_settings(capsys):
    assert cli(["fit", "--all", "--degree", "3"]) == 2
    assert "take only --force, not --degree" in capsys.readouterr().err


def test_a_step_that_fails_fails_the_command(monkeypatch, capsys):
    """A step whose refit differs from its committed file (exit 1) makes --all exit 1 and name
    it, after the other steps and codegen ran; nothing is fitted here."""
    ran = []

    def step(name, status):
        return fit_all.Step(name, lambda: [], lambda force: ran.append((name, force)) or status)

    monkeypatch.setattr(fit_all, "STEPS", (step("a", 0), step("b", 1), step("c", 0)))
    monkeypatch.setattr(codegen, "outputs", lambda: {"files": "texts"})
    monkeypatch.setattr(codegen, "write_outputs", lambda files: ran.append(files))
    assert fit_all.run(force=True) == 1
    assert ran == [("a", True), ("b", True), ("c", True), {"files": "texts"}]
    assert "did not refit their committed specs: b" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["fit", "--all"], ["fit", "--all", "--force"]])
def test_all_runs_the_steps(monkeypatch, argv):
    seen = []
    monkeypatch.setattr(fit_all, "run", lambda force, list_only: seen.append(force) or 0)
    assert cli(argv) == 0
    assert seen == ["--force" in argv]
