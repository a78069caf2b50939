"""The evidence scripts of experiments/archive/cpu_op_costs/ that the README's speed-target
claims rest on.

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

HERE = Path(__file__).resolve().parents[1] / "experiments" / "archive" / "cpu_op_costs"


def _load_backward_degrees():
    spec = importlib.util.spec_from_file_location("backward_degrees", HERE / "backward_degrees.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.parametrize(
    "source", ["op_costs.cpp", "op_costs16.cpp", "op_costs16_avx2.cpp", "op_costs_half.cpp"]
)
def test_microbenchmarks_compile(source):
    # -fsyntax-only: the target attributes are checked without needing the CPU to run them.
    done = subprocess.run(
        ["g++", "-O2", "-std=c++17", "-pthread", "-fsyntax-only", str(HERE / source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def _cpu_has(flag: str) -> bool:
    try:
        return flag in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.skipif(not _cpu_has("avx512_fp16"), reason="the CPU has no AVX512-FP16")
def test_half_program_intrinsics_are_the_replay(tmp_path):
    """op_costs_half.cpp's loop (AVX512-FP16 intrinsics) gives, on every 16-bit pattern, the
    bits of turbogelu.approx.half16's replay (NaNs: any NaN)."""
    from turbogelu.approx import half16

    table = half16.fit()
    np.ascontiguousarray(table.T).view(np.uint16).tofile(tmp_path / "table.bin")
    exe = tmp_path / "op_costs_half"
    built = subprocess.run(
        ["g++", "-O2", "-std=c++17", "-o", str(exe), str(HERE / "op_costs_half.cpp")],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    ran = subprocess.run(
        [str(exe), str(tmp_path / "table.bin"), "--check", str(tmp_path / "out.bin")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    got = np.fromfile(tmp_path / "out.bin", np.uint16).view(np.float16)
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    want = half16.replay(x, table)
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


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


def _float_literals(source: str, name: str) -> list[float]:
    """The float literals of `const float NAME = v;` or `const float NAME[n] = {...};` in a
    source of experiments/archive/cpu_op_costs/ (a declaration may name several constants)."""
    import re

    text = (HERE / source).read_text()
    m = re.search(rf"\b{name}(?:\[\d+\])?\s*=\s*(\{{[^}}]*\}}|[^,;]+)", text)
    assert m, f"{source}: no constant {name}"
    return [float(v) for v in re.findall(r"-?\d+\.\d*(?:e-?\d+)?", m.group(1))]


def _f32(value: float) -> float:
    return float(np.float32(value))


@pytest.mark.parametrize(
    ("source", "spec_file", "constants"),
    [
        ("op_costs.cpp", "cells/gelu_none.json", {"kScale": "scale", "kClamp": "clamp"}),
        ("op_costs16.cpp", "cells/gelu_none.json", {"kScale": "scale", "kClamp": "clamp"}),
        ("op_costs16_avx2.cpp", "gelu_exact.json", {"kScale": "scale", "kClamp": "clamp"}),
    ],
)
def test_microbenchmark_constants_are_the_specs(source, spec_file, constants):
    """The clamp and scale literals are the spec's float32 values exactly (a drifted digit
    times a different program than the one its comment names); the AVX2 source's
    coefficients are the spec's truncated to their printed digits (within 1e-8)."""
    import json

    spec = json.loads((HERE.parents[2] / "data" / "specs" / spec_file).read_text())
    for name, key in constants.items():
        (value,) = _float_literals(source, name)
        want = float.fromhex(spec["forward"][key])
        assert _f32(value) == want, f"{source}: {name} = {value!r}, {spec_file} says {want!r}"
    if source == "op_costs16_avx2.cpp":
        for name, part in (("kCoeffs", "forward"), ("kDerivCoeffs", "backward_direct")):
            got = _float_literals(source, name)
            want = [float.fromhex(c) for c in spec[part]["coefficients"]]
            assert len(got) == len(want) and np.allclose(got, want, rtol=0, atol=1e-8), (
                f"{source}: {name} = {got}, {spec_file} {part} says {want}"
            )
