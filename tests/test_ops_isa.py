"""The CPU instruction set the turbogelu ops run: introspection, selection (the switch and the
TURBOGELU_CPU_ISA variable) and its errors, and the bfloat16 store of every instruction set."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from conftest import (
    ISAS,
    ROOT,
    subprocess_env,
)
from op_references import OPS

import turbogelu
from turbogelu import ops as tg_ops

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")


# ------------------------------------------------------------------ instruction sets


def test_isa_introspection():
    assert ISAS[-1] == "scalar"
    assert set(ISAS) <= {"avx512bf16", "avx512", "avx2", "neonbf16", "neon", "scalar"}
    # one architecture's sets only: x86-64's or ARM64's
    assert not (set(ISAS) & {"avx2", "avx512"} and set(ISAS) & {"neon", "neonbf16"})
    assert turbogelu.cpu_isa() in ISAS
    assert turbogelu.cpu_isas_available() == ISAS


def test_unknown_isa_raises_value_error():
    before = turbogelu.cpu_isa()
    for name in ("sse9", "AVX2", "", "auto "):
        with pytest.raises(
            ValueError, match="choose auto, avx512bf16, avx512, avx2, neonbf16, neon or scalar"
        ):
            OPS._set_cpu_isa(name)
    assert turbogelu.cpu_isa() == before


def test_unavailable_isa_raises():
    missing = [n for n in ("avx512bf16", "avx512", "avx2", "neonbf16", "neon") if n not in ISAS]
    if not missing:
        pytest.skip("every instruction set is available here")
    with pytest.raises(RuntimeError, match="not available"):
        OPS._set_cpu_isa(missing[0])


@pytest.mark.parametrize("program", ["poly", "cells"])
def test_bfloat16_blocks_with_subnormals_match_every_isa(program):
    # The avx512bf16 store converts with vcvtne2ps2bf16, which flushes subnormals: a block
    # of 32 values that holds one must take the integer rounding instead. Put a subnormal
    # (input, or an output from the smallest normals) at each position of a block, with
    # ordinary values around it, and require the bits of every other instruction set.
    gen = torch.Generator().manual_seed(7)
    base = (3 * torch.randn(32 * 40, generator=gen)).to(torch.bfloat16)
    tiny = torch.tensor([2.0**-130, -(2.0**-133), 2.0**-126, -(2.0**-126)]).to(torch.bfloat16)
    for j in range(32):
        base[32 * j + j] = tiny[j % 4]  # block j: position j
    x = torch.cat([base, base[5:]])  # and again, shifted across block edges
    g = torch.randn(x.shape, generator=gen).to(torch.bfloat16)
    got = {}
    with tg_ops.use_cpu_kernel(program):
        for isa in ISAS:
            with tg_ops.use_cpu_isa(isa):
                got[isa] = (OPS.gelu(x), OPS.gelu_backward(g, x))
    ref_f, ref_b = got["scalar"]
    assert (ref_f.float().abs() < 2.0**-126).sum() >= 16  # subnormal results do occur
    for isa, (f, b) in got.items():
        assert torch.equal(f.view(torch.int16), ref_f.view(torch.int16)), isa
        assert torch.equal(b.view(torch.int16), ref_b.view(torch.int16)), isa


def test_use_cpu_isa_restores_after_an_error():
    before = turbogelu.cpu_isa()
    with pytest.raises(ZeroDivisionError):
        with tg_ops.use_cpu_isa("scalar"):
            assert turbogelu.cpu_isa() == "scalar"
            1 / 0  # noqa: B018
    assert turbogelu.cpu_isa() == before
    with tg_ops.use_cpu_isa("auto"):
        assert turbogelu.cpu_isa() == ISAS[0]


_CHILD = """
import torch, turbogelu
x = torch.linspace(-6, 6, 101)
try:
    y = turbogelu.gelu(x)
except Exception as e:
    print("ERROR", type(e).__name__, e)
else:
    print("ISA", turbogelu.cpu_isa(), float(y.double().sum()))
"""


ENV_VALUES = ["avx2", "scalar", "bogus", None]  # None: the variable unset (auto)


@pytest.fixture(scope="module")
def isa_env_children():
    """{TURBOGELU_CPU_ISA value: the output of a child interpreter started with it}; two
    children at a time (each imports torch: seconds)."""
    results = {}
    for i in range(0, len(ENV_VALUES), 2):
        procs = {
            v: subprocess.Popen(
                [sys.executable, "-c", _CHILD],
                env=subprocess_env(**({} if v is None else {"TURBOGELU_CPU_ISA": v})),
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for v in ENV_VALUES[i : i + 2]
        }
        results.update({v: p.communicate(timeout=120)[0] for v, p in procs.items()})
    return results


@pytest.mark.parametrize("name", ["avx2", "scalar", None], ids=["avx2", "scalar", "unset"])
def test_env_var_selects_isa(isa_env_children, name):
    if name is not None and name not in ISAS:
        pytest.skip(f"{name} not available on this CPU")
    out = isa_env_children[name]
    expected = ISAS[0] if name is None else name
    line = [ln for ln in out.splitlines() if ln.startswith(("ISA", "ERROR"))]
    assert line and line[0].split()[:2] == ["ISA", expected], out
    checksum = float(line[0].split()[2])
    assert checksum == pytest.approx(float(OPS.gelu(torch.linspace(-6, 6, 101)).double().sum()))


def test_env_var_bogus_gives_a_clear_error(isa_env_children):
    out = isa_env_children["bogus"]
    assert "ERROR ValueError" in out, out
    assert "'bogus'" in out, out
    assert "auto, avx512bf16, avx512, avx2, neonbf16, neon or scalar" in out, out
