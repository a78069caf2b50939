"""One fit command and one schema for every committed spec (issue 36, item 4): ``python -m
turbogelu fit --all`` (``make fit``) runs a step per kind of spec, together the steps own every
file under ``data/specs/``, each once, every file has spec.py's envelope, and no other command
writes them. Each step's refit is checked against its committed files by the
kind's own tests (test_fit, test_cells, test_packed, test_family_programs,
test_exp2_programs); running them all here would repeat those minutes."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from turbogelu.approx import codegen, fit_all, spec
from turbogelu.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]


def test_the_steps_own_every_committed_spec_once():
    owned = [p.resolve() for step in fit_all.STEPS for p in step.paths()]
    assert [p for p, n in Counter(owned).items() if n > 1] == []
    committed = [p.resolve() for p in fit_all.committed_specs()]
    assert sorted(owned) == sorted(committed)
    assert len(committed) >= 27  # GELU 2, cells 5, cells16 7, packed 4, family 7, exp2 2


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


# ---------------------------------------------------------------- one schema, one writer


# Which SCHEMAS kind reads a committed file: by its program, function and tier.
def _kind(doc: dict) -> str:
    gelu = doc["function"].startswith("gelu_")
    if doc["program"] == "cells":
        if "format" in doc:  # a program sized for a 16-bit format
            return "cells16"
        return "cells" if gelu else "family_cells"
    if doc["program"] == "polynomial":  # (GELU's paper tier: a family spec, gelu_<mode>/)
        return "poly" if gelu and doc["tier"] == "accurate" else doc["tier"]
    return {"packed_bf16": "packed", "exp2": "exp2"}[doc["program"]]


def test_every_spec_has_the_one_schema():
    """Every committed spec opens with spec.envelope's keys, in its order, names `fit --all`
    as its maker and is read by its kind's loader (the envelope's checks, then the kind's)."""
    head = ["schema", "function", "program", "tier", "generated_by", "parts"]
    programs = Counter()
    for path in fit_all.committed_specs():
        doc = json.loads(path.read_text())
        assert list(doc)[: len(head)] == head, path
        assert doc["schema"] == spec.SCHEMA_VERSION == 2
        assert doc["generated_by"] == spec.FIT_ALL, path
        spec.check_envelope(doc, doc["program"])
        assert spec.load(path, _kind(doc)) == doc
        programs[doc["program"]] += 1
    assert set(programs) == set(spec.PROGRAMS)


def test_the_envelope_is_checked(tmp_path):
    doc = json.loads(spec.spec_path("sigmoid", "accurate").read_text())
    bad = tmp_path / "accurate.json"
    for change, message in [
        ({"schema": 1}, "schema 1 != 2"),
        ({"program": "cells"}, "program is 'cells', not 'polynomial'"),
        ({"function": "erf"}, "function 'erf' is not one of"),
        ({"tier": "fast"}, "tier is 'fast'"),
        ({"parts": ["forward", "upward"]}, "parts"),
        ({"default_backward": "both"}, "default_backward is 'both'"),
        ({"generated_by": None}, "generated_by is not a command"),
    ]:
        bad.write_text(json.dumps({**doc, **change}))
        with pytest.raises(ValueError, match=re.escape(message)):
            spec.load(bad, "accurate")
    del doc["parts"]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="it has no key 'parts'"):
        spec.load(bad, "accurate")


def test_only_the_fit_command_writes_committed_specs(tmp_path, capsys):
    """A lab module's own command compares its refit with the committed spec, or writes it
    elsewhere; asked to overwrite the committed one (--force), it refuses and names `fit
    --all`; the fit command itself may (spec.fit_writes)."""
    from turbogelu.approx import exp2_programs

    path = exp2_programs.spec_file("paper")
    before = path.read_bytes()
    assert exp2_programs.main(["--tier", "paper"]) == 0  # matches: unchanged
    assert "unchanged" in capsys.readouterr().err
    stale = json.loads(before)
    stale["forward"]["coefficients"][1] = "0x1p-7"  # (a coefficient no fit gives)
    try:
        path.write_text(spec.dumps(stale, "exp2"))
        assert exp2_programs.main(["--tier", "paper", "--force"]) == 1
        err = capsys.readouterr().err
        assert "written only by `python -m turbogelu fit --all`" in err
        assert json.loads(path.read_text()) == stale  # left as it was
        with spec.fit_writes():
            assert exp2_programs.main(["--tier", "paper", "--force"]) == 0
        # the fit command restored it (its measured figures to spec.MEASURED_RTOL: their last
        # digits belong to the CPU that refits)
        assert spec.differences(json.loads(before), json.loads(path.read_text())) == []
    finally:
        path.write_bytes(before)
    out = tmp_path / "paper.json"
    assert exp2_programs.main(["--tier", "paper", "--out", str(out)]) == 0
    assert spec.differences(json.loads(before), json.loads(out.read_text())) == []
