"""The evidence scripts of experiments/cpu_op_costs/ that the README's speed-target claims rest on.

The microbenchmarks are timed by hand (`run.sh`), never here; what is held here is that they
still compile and that `backward_degrees.py`'s check separates a backward within the bound
from one outside it (the README says degree 7 is the lowest within it and degree 6 misses).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parents[1] / "experiments" / "cpu_op_costs"


def _load_backward_degrees():
    spec = importlib.util.spec_from_file_location("backward_degrees", HERE / "backward_degrees.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.parametrize("source", ["op_costs.cpp", "op_costs16.cpp", "op_costs16_avx2.cpp"])
def test_microbenchmarks_compile(source):
    # -fsyntax-only: the target attributes are checked without needing the CPU to run them.
    done = subprocess.run(
        ["g++", "-O2", "-std=c++17", "-pthread", "-fsyntax-only", str(HERE / source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("degree", "clamp", "within"), [(7, 4.1, True), (6, 4.0, False)])
def test_backward_degree_margin(degree, clamp, within):
    bd = _load_backward_degrees()
    from turbogelu.approx import reference, report

    part = bd.fit_part(degree, clamp)
    for fmt in bd.FORMATS:
        x = report.all_finite(fmt)
        assert x.size > 60000 and np.isfinite(x).all()
        exact = reference.gelu_grad(x.astype(np.float64), "none")
        margin = bd.margin16(part, fmt, x, exact)
        assert (margin >= 0) == within, (fmt, margin)
