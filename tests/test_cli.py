"""The command line: python -m turbogelu report (fit and bench have their own tests)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "turbogelu", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_report_writes_tables_json_and_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    r = _run(
        "report", "--spec", "data/specs/gelu_exact.json", "--out", str(out), "--plot", str(png)
    )
    assert r.returncode == 0, r.stderr
    assert "every finite bfloat16 input" in r.stdout and "every finite float16 input" in r.stdout
    data = json.loads(out.read_text())
    assert data["function"] == "gelu"
    regions = {
        (e["format"], reg["region"]): reg for e in data["exhaustive"] for reg in e["regions"]
    }
    # The shipped spec's exhaustive bounds (tests/test_accuracy.py holds them on the kernel).
    assert regions[("bfloat16", "-3 <= x < 0")]["max_ulp"] <= 1
    assert regions[("bfloat16", "x >= 0")]["max_ulp"] <= 1
    assert regions[("float16", "-3 <= x < 0")]["max_ulp"] <= 8
    assert png.stat().st_size > 1000


def test_report_backward_part_uses_the_derivative(tmp_path):
    out = tmp_path / "b.json"
    r = _run("report", "--spec", "data/specs/gelu_tanh.json", "--part", "backward_direct",
             "--out", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["function"] == "gelu_tanh_grad"
    assert data["dense"]["max_abs"] <= 6e-4


def test_report_missing_spec_is_a_clear_error(tmp_path):
    r = _run("report", "--spec", str(tmp_path / "nope.json"))
    assert r.returncode != 0
    assert "spec file not found" in r.stderr


def test_reproduce_shows_the_benchmark_progress():
    # The benchmark is the longest step (~9 min in the full run): its progress is shown
    # (a bar on a terminal, a line per part otherwise), not turned off.
    from experiments import reproduce

    for quick in (True, False):
        cmds = reproduce.steps(quick)["bench"]
        assert [c[3] for c in cmds] == ["bench", "bench-compiled", "bench-paper"]
        assert all("--no-progress" not in c for c in cmds)


BAD_SPECS = {
    "missing": None,  # no file at all
    "bad_json": "{bad json",
    "no_schema": '{"a": 1}',
    "a_list": "[]",
    "empty": "",
}


def test_every_bad_spec_is_one_line_and_exit_2(tmp_path, capsys):
    """A missing, unparsable, wrong-shaped or empty spec, and a folder given as one, end in
    one line naming the file and exit 2, never a traceback (issue 36, item 8)."""
    from turbogelu import cli

    for name, text in BAD_SPECS.items():
        path = tmp_path / f"{name}.json"
        if text is not None:
            path.write_text(text)
        assert cli.main(["report", "--spec", str(path)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and str(path) in err and "\n" not in err, (name, err)
    assert cli.main(["report", "--spec", str(tmp_path)]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err
    assert cli.main(["codegen", "--spec-dir", str(tmp_path / "none"), "--check"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_an_unwritable_out_is_one_line_and_exit_2(tmp_path, capsys):
    from turbogelu import cli

    blocked = tmp_path / "a_file"
    blocked.write_text("")
    out = blocked / "x.h"  # under a file: no one can create it, root included
    assert cli.main(["codegen", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err


def test_experiments_bad_arguments_are_usage_errors(capsys):
    """Counts below 1, nan and unknown rows are refused before any work starts, in one line
    with exit 2 (issue 36, item 8: --rounds 0 and --threads 0 used to start a full run on the
    defaults, --size -5 and --rows bogus ended in tracebacks, the search printed "(no rows)")."""
    import pytest

    from experiments import cli as ecli

    for argv in (
        ["bench", "--size", "-5"],
        ["bench", "--rounds", "0"],
        ["bench", "--calls", "0"],
        ["bench", "--threads", "0"],
        ["search", "--target", "sigmoid", "--max-gap", "nan"],
    ):
        with pytest.raises(SystemExit) as exc:
            ecli.main(argv)
        assert exc.value.code == 2, argv
        assert argv[-2] in capsys.readouterr().err, argv
    for argv, words in (
        (["table2", "--rows", "bogus"], "no Table 2 row 'bogus'"),
        (["search", "--target", "sigmoid", "--fit-intervals", "-4"], "--fit-intervals"),
        (["search", "--target", "sigmoid", "--clamps", "0"], "--clamps"),
    ):
        assert ecli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and words in err and "\n" not in err, (argv, err)


def test_lab_commands_without_the_lab_name_the_extra(monkeypatch, capsys):
    """Every python -m turbogelu command is the lab's: without scipy (or mpmath, numpy) it
    says which packages and the extra that brings them, in one line, exit 2 (issue 36, 5)."""
    from turbogelu import cli

    for blocked in (("scipy",), ("scipy", "mpmath")):
        with monkeypatch.context() as m:
            for name in blocked:
                m.setitem(sys.modules, name, None)  # an import of it raises ImportError
            for command in (["report"], ["fit"], ["codegen", "--check"]):
                assert cli.main(command) == 2, command
                err = capsys.readouterr().err.strip()
                assert err.startswith(f"error: python -m turbogelu {command[0]} is part of")
                assert f"needs {', '.join(blocked)}: pip install 'turbogelu[lab]'" in err
                assert "\n" not in err
    assert cli.missing_lab_packages() == []  # this environment has the lab
