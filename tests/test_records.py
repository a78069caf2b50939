"""The harness's records (``experiments.records``): one rule for the files it writes, the
machine and the git revision every result carries, the quantiles of its timings."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments import records

ROOT = Path(__file__).resolve().parents[1]


def test_import_does_not_import_torch_or_numpy():
    code = (
        "import sys, experiments.records;"
        " assert 'torch' not in sys.modules and 'numpy' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_json_is_safe_indented_and_nan_is_null(tmp_path):
    data = {
        "nan": math.nan,
        "inf": [math.inf, -math.inf, 1.5],
        "numpy": np.float32(0.25),
        "array": np.arange(3),
        "path": tmp_path,
        "tuple": (1, 2),
        3: "int key",
    }
    path = records.write_json(tmp_path / "sub" / "r.json", data)
    assert path == tmp_path / "sub" / "r.json"
    text = path.read_text()
    assert text == json.dumps(json.loads(text), indent=1) + "\n"
    assert json.loads(text) == {
        "nan": None,
        "inf": [None, None, 1.5],
        "numpy": 0.25,
        "array": [0, 1, 2],
        "path": str(tmp_path),
        "tuple": [1, 2],
        "3": "int key",
    }
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left


def test_a_value_that_cannot_be_written_leaves_the_old_file(tmp_path):
    path = records.write_json(tmp_path / "r.json", {"a": 1})
    with pytest.raises(TypeError):
        records.write_json(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_jsonl_appends_and_common_fields_win(tmp_path):
    path = tmp_path / "r.jsonl"
    records.write_jsonl(path, [{"a": 1, "run": "row"}], {"run": "a"})
    records.write_jsonl(path, [{"a": 2, "x": math.nan}], {"run": "b"})
    lines = path.read_text().splitlines()
    assert lines == ['{"a": 1, "run": "a"}', '{"a": 2, "x": null, "run": "b"}']
    records.write_jsonl(path, [{"a": 3}], append=False)
    assert path.read_text() == '{"a": 3}\n'


def test_bytes_are_written_atomically_too(tmp_path):
    path = records.write_atomic(tmp_path / "d" / "f.bin", b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert [p.name for p in path.parent.iterdir()] == ["f.bin"]


def test_quantile_interpolates_as_numpy():
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    for q in (0.0, 0.05, 0.5, 0.95, 1.0):
        assert records.quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))


def test_machine_and_git_revision():
    m = records.machine()
    assert set(m) == {"cpu", "logical_cpus", "platform", "python"} and m["logical_cpus"] >= 1
    describe, commit = records.git_describe(), records.git_commit()
    if commit is None:
        pytest.skip("not a git checkout here")
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", commit)
    assert commit.startswith(describe.removesuffix("-dirty").rsplit("-g", 1)[-1])
    assert describe.endswith("-dirty") == commit.endswith("+dirty")


def test_reading_names_the_file_at_fault(tmp_path):
    """JSON errors named no file: the message now says which, and where in it."""
    good = records.write_json(tmp_path / "good.json", {"a": [1, 2]})
    assert records.read_json(good) == {"a": [1, 2]}
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": [1, 2}\n')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(bad))}: not valid JSON \(.*line 1"):
        records.read_json(bad)
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "missing.json"))):
        records.read_json(tmp_path / "missing.json")
    lines = tmp_path / "rows.jsonl"
    lines.write_text('{"a": 1}\n\n{"a": 2\n')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(lines))}:3: not valid JSON"):
        records.read_jsonl(lines)
    lines.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert records.read_jsonl(lines) == [{"a": 1}, {"a": 2}]
