"""The Apple GPU backend (kernels/mps/gelu_kernels.metal, turbogelu/mps.py), without a Mac.

* the Metal source is what the specs generate, and holds every coefficient, R and scale bit
  for bit (exact decimal literals, checked against the specs' hex);
* it is valid C++ against a stub of <metal_stdlib> (tests/metal_stub), for Metal before 3.1
  (bfloat16 as ushort bits), 3.1 (Metal's bfloat) and 3.2 (the fp pragmas);
* compiled against that stub and run on the CPU, its kernels give the CPU kernels' bits for
  every bfloat16 / float16 input and float32 values, every coefficient set: the Metal code does
  family_eval.h's GELU arithmetic (what remains unproven is Apple's compiler and GPU);
* turbogelu/mps.py, the MPS kernels of the ops: registered; with a fake
  ``torch.mps.compile_shader`` (kernels that call the CPU op for their coefficient set) and the
  device check pointed at the CPU, every op's checks, layouts and out= / in-place handling run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from decimal import Decimal

import numpy as np
import pytest
import torch
from conftest import APPROXIMATES, BACKWARDS, ROOT, assert_same_bits, load_spec

import turbogelu
from turbogelu import mps
from turbogelu.approx import codegen

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

OPS = torch.ops.turbogelu
STUB = ROOT / "tests" / "metal_stub"
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not installed")
SOURCE = codegen.METAL.read_text()


# ------------------------------------------------------------------ the generated source


def test_source_is_generated_from_the_specs():
    assert SOURCE == codegen.generate_metal()
    assert SOURCE.startswith(
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen`"
    )
    assert mps.SOURCE == codegen.METAL
    assert mps.SETS == codegen.METAL_SETS


def _table(name: str) -> list[str]:
    body = re.search(rf"constant float {name}\[[^=]*= \{{(.*?)\n\}};", SOURCE, re.S)[1]
    return re.findall(r"(-?\d+\.\d+)f,", body)


def _f32_bits(literal: str) -> int:
    """The float32 a decimal literal denotes, asserting that it is exactly representable."""
    d = Decimal(literal)
    f = np.float32(float(d))
    assert Decimal(float(f)) == d, f"{literal} is not exactly a float32"
    return int(f.view(np.uint32))


def _hex_bits(hexstr: str) -> int:
    return int(np.float32(float.fromhex(hexstr)).view(np.uint32))


def test_source_holds_the_coefficients_bit_for_bit():
    clamps, scales, coeffs = _table("TG_CLAMP"), _table("TG_SCALE"), _table("TG_COEFFS")
    n = int(re.search(r"#define TG_N (\d+)", SOURCE)[1])
    assert len(clamps) == len(scales) == len(mps.SETS) and len(coeffs) == n * len(mps.SETS)
    for i, (mode, part) in enumerate(mps.SETS):
        s = load_spec(mode)[part]
        assert _f32_bits(clamps[i]) == _hex_bits(s["clamp"])
        assert _f32_bits(scales[i]) == _hex_bits(s["scale"])
        row = [_f32_bits(c) for c in coeffs[i * n : (i + 1) * n]]
        want = [_hex_bits(c) for c in s["coefficients"]]
        assert row == want + [0] * (n - len(want)), (mode, part)  # zero-padded to TG_N


def test_source_names_the_default_backward():
    assert mps.default_backward() == {m: load_spec(m)["default_backward"] for m in APPROXIMATES}


def test_exact_decimal():
    assert codegen.exact_decimal("0x1p-2") == "0.25"
    assert codegen.exact_decimal("-0x1.8p+1") == "-3.0"
    assert Decimal(codegen.exact_decimal("0x1.4950bap-3")) == Decimal(
        float.fromhex("0x1.4950bap-3")
    )


# ------------------------------------------------------------------ C++ against the stub

FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Wno-attributes", "-Wno-unknown-pragmas", "-Werror"]


@needs_gxx
@pytest.mark.parametrize("metal_version", [300, 310, 320])
def test_source_passes_a_syntax_check(metal_version):
    cmd = [GXX, "-fsyntax-only", "-x", "c++", *FLAGS, f"-D__METAL_VERSION__={metal_version}"]
    proc = subprocess.run(
        [*cmd, f"-I{STUB}", str(codegen.METAL)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


@needs_gxx
def test_source_defines_the_kernels_mps_py_calls():
    proc = subprocess.run(
        [GXX, "-E", "-P", "-x", "c++", "-std=c++17", f"-I{STUB}", str(codegen.METAL)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    names = set(re.findall(r"\bvoid (gelu_\w+)\(", proc.stdout))
    want = {f"gelu_{d}_{t}" for d in ("forward", "backward") for t in mps.KERNEL_SUFFIX.values()}
    assert names == want


@pytest.fixture(scope="module", params=[300, 310], ids=["metal3.0", "metal3.1"])
def harness(request, tmp_path_factory):
    if GXX is None:
        pytest.skip("g++ not installed")
    exe = tmp_path_factory.mktemp("harness") / "harness"
    cmd = [GXX, "-O1", "-ffp-contract=off", *FLAGS, "-Wno-unused-parameter"]
    cmd += [f"-D__METAL_VERSION__={request.param}", f"-I{STUB}", f"-I{codegen.METAL.parent}"]
    cmd += ["-x", "c++", str(STUB / "harness.cpp"), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return exe


def _run_harness(exe, tmp_path, kind: str, grad: torch.Tensor, x: torch.Tensor):
    n = x.numel()
    raw = lambda t: t.contiguous().view(torch.uint8).numpy().tobytes()  # noqa: E731
    (tmp_path / "in").write_bytes(np.int64(n).tobytes() + raw(grad) + raw(x))
    subprocess.run([str(exe), kind, str(tmp_path / "in"), str(tmp_path / "out")], check=True)
    out = torch.from_numpy(np.frombuffer((tmp_path / "out").read_bytes(), dtype=np.uint8).copy())
    return out.view(x.dtype).reshape(len(mps.SETS), 2, n)


def _all16(dtype):
    return torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)


@pytest.mark.parametrize(
    ("kind", "dtype"),
    [("float", torch.float32), ("half", torch.float16), ("bfloat", torch.bfloat16)],
)
def test_metal_kernels_give_the_cpu_bits(harness, tmp_path, kind, dtype):
    if dtype == torch.float32:  # every bfloat16 value and random float32 values
        g = torch.Generator().manual_seed(0)
        x = torch.cat([_all16(torch.bfloat16).float(), torch.randn(1 << 16, generator=g) * 4])
    else:
        x = _all16(dtype)
    grad = torch.randn(x.numel(), generator=torch.Generator().manual_seed(1)).to(dtype)
    got = _run_harness(harness, tmp_path, kind, grad, x)
    for s, (mode, part) in enumerate(mps.SETS):
        msg = f"set {s} ({mode} {part})"
        if part == "forward":  # (the harness runs every set both ways; these are the ops')
            assert_same_bits(got[s, 0], OPS.gelu(x, mode), msg)
        else:
            expected = OPS.gelu_backward(grad, x, mode, part.removeprefix("backward_"))
            assert_same_bits(got[s, 1], expected, msg)


# ------------------------------------------------------------------ turbogelu/mps.py


def test_mps_kernels_are_registered():
    for op in mps.OPS:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"turbogelu::{op}", "MPS"), op


class _FakeKernel:
    """Stands for one Metal kernel: checks the arguments the way the real binding takes them
    (1-D contiguous tensors, then n and s as ints, threads=n), computes with the CPU op."""

    def __init__(self, name, calls):
        self.direction, self.kind = name.split("_")[1:]
        self.calls = calls

    def __call__(self, *args, threads):
        *tensors, n, s = args
        assert all(t.dim() == 1 and t.is_contiguous() and t.numel() == n for t in tensors)
        assert isinstance(n, int) and isinstance(s, int) and threads == n
        assert mps.KERNEL_SUFFIX[tensors[0].dtype] == self.kind
        mode, part = mps.SETS[s]
        if self.direction == "forward":
            assert part == "forward"
            x, out = tensors
            out.copy_(OPS.gelu(x, mode))
        else:
            g, x, out = tensors
            out.copy_(OPS.gelu_backward(g, x, mode, part.removeprefix("backward_")))
        self.calls.append((self.direction, self.kind, n, s))


class _FakeLibrary:
    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        if not name.startswith("gelu_"):
            raise AttributeError(name)
        return _FakeKernel(name, self.calls)


@pytest.fixture
def fake_mps(monkeypatch):
    """mps.py with a fake compile_shader and its device check pointed at the CPU; yields the
    list of kernel calls."""
    calls, sources = [], []

    def compile_shader(src):
        sources.append(src)
        return _FakeLibrary(calls)

    mps.library.cache_clear()
    monkeypatch.setattr(torch.mps, "compile_shader", compile_shader, raising=False)
    monkeypatch.setattr(mps, "DEVICE", "cpu")
    yield calls
    assert len(sources) <= 1 and all(s == SOURCE for s in sources)  # compiled once, this file
    mps.library.cache_clear()


LAYOUTS = {
    "n17": lambda t: t[:17],
    "2d": lambda t: t[:205].reshape(5, 41),
    "transposed": lambda t: t[:205].reshape(41, 5).t(),
    "step2": lambda t: t[:204].reshape(6, 34)[:, ::2],
    "expanded": lambda t: t[:9].reshape(1, 9).expand(4, 9),
    "channels_last": lambda t: t[:120].reshape(2, 3, 4, 5).to(memory_format=torch.channels_last),
    "offset": lambda t: t[3:1000],
    "0dim": lambda t: t[5],
    "empty": lambda t: t[:0].reshape(0, 3),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_mps_ops_with_a_fake_shader(fake_mps, dtype, layout):
    g = torch.Generator().manual_seed(2)
    base = (torch.randn(4096, generator=g) * 3).to(dtype)
    x = LAYOUTS[layout](base)
    grad = LAYOUTS[layout]((torch.randn(4096, generator=g)).to(dtype))
    for ap in APPROXIMATES:
        y = mps.gelu(x, ap)
        assert y.stride() == OPS.gelu(x, ap).stride()
        assert_same_bits(y, OPS.gelu(x, ap))
        for bw in BACKWARDS:
            assert_same_bits(mps.gelu_backward(grad, x, ap, bw), OPS.gelu_backward(grad, x, ap, bw))
        out = torch.empty_like(x)
        mps.gelu_out(x, ap, out=out)
        assert_same_bits(out, OPS.gelu(x, ap))
        strided = torch.empty(*x.shape, 2, dtype=dtype)[..., 0]  # not dense: via a temporary
        mps.gelu_backward_out(grad, x, ap, "matched", out=strided)
        assert_same_bits(strided, OPS.gelu_backward(grad, x, ap, "matched"))
        if layout != "expanded":
            z = x.clone()
            mps.gelu_inplace(z, ap)
            assert_same_bits(z, OPS.gelu(x, ap))
    assert (not fake_mps) == (x.numel() == 0)  # the kernels ran (not for an empty tensor)


def test_mps_coefficient_sets(fake_mps):
    x = torch.randn(10)
    for ap in APPROXIMATES:
        mps.gelu(x, ap)
        for bw in BACKWARDS:
            mps.gelu_backward(x, x, ap, bw)
    default = {
        ap: mps.SETS.index((ap, f"backward_{load_spec(ap)['default_backward']}"))
        for ap in APPROXIMATES
    }
    assert [c[3] for c in fake_mps] == [
        0, default["none"], 1, 2,
        3, default["tanh"], 4, 5,
    ]  # fmt: skip


def test_mps_errors(fake_mps):
    x = torch.randn(4)
    with pytest.raises(TypeError, match="float64 is not supported on MPS"):
        mps.gelu(x.double())
    with pytest.raises(TypeError, match="supported dtypes are float32, float64, float16"):
        mps.gelu(torch.ones(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        mps.gelu(x, "foo")
    with pytest.raises(ValueError, match="backward must be"):
        mps.gelu(x, backward="foo")
    with pytest.raises(ValueError, match="backward must be"):
        mps.gelu_backward(x, x, "none", "foo")
    with pytest.raises(TypeError, match="out has dtype"):
        mps.gelu_out(x, out=torch.empty(4, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="out has shape"):
        mps.gelu_out(x, out=torch.empty(5))
    with pytest.raises(RuntimeError, match="internal overlap"):
        mps.gelu_out(x, out=torch.empty(1).expand(4))
    with pytest.raises(TypeError, match="grad has dtype"):
        mps.gelu_backward(x.half(), x)
    with pytest.raises(RuntimeError, match="grad has shape"):
        mps.gelu_backward(torch.randn(3), x)
    with pytest.raises(RuntimeError, match="this is the MPS kernel"):
        mps.gelu_out(x, out=torch.empty(4, device="meta"))
    assert not fake_mps  # every check before any kernel


def test_mps_without_compile_shader(monkeypatch):
    mps.library.cache_clear()
    monkeypatch.delattr(torch.mps, "compile_shader", raising=False)
    with pytest.raises(RuntimeError, match=r"torch.mps.compile_shader \(PyTorch >= 2.7\)"):
        mps.library()
    mps.library.cache_clear()


def test_mps_dispatch_reaches_the_python_kernels(fake_mps, monkeypatch):
    """Through the dispatcher, autograd included: the MPS kernels are what torch.ops calls for
    an MPS tensor. Without one, call them through the CPU key of a scratch library."""
    x = (torch.randn(33) * 3).requires_grad_()
    lib = torch.library.Library("turbogelu_mps_test", "DEF")
    lib.define("gelu(Tensor x, str approximate='none', *, str backward='default') -> Tensor")
    lib.impl("gelu", mps.gelu, "CPU")
    y = torch.ops.turbogelu_mps_test.gelu(x.detach(), "tanh")
    assert_same_bits(y, OPS.gelu(x.detach(), "tanh"))
    assert fake_mps and fake_mps[-1][:2] == ("forward", "float")
    # and the real op still takes the compiled CPU kernel on the CPU
    n = len(fake_mps)
    turbogelu.gelu(x).sum().backward()
    assert len(fake_mps) == n
    del lib


def test_codegen_check_covers_the_metal_source(tmp_path, monkeypatch, capsys):
    from turbogelu.cli import main as cli

    stale = tmp_path / "gelu_kernels.metal"
    stale.write_text(SOURCE.replace("0.16079850494861602783203125f", "0.1607985f"))
    monkeypatch.setattr(codegen, "METAL", stale)
    assert cli(["codegen", "--check"]) == 1
    assert f"{stale} differs" in capsys.readouterr().err
    stale.write_text(SOURCE)
    assert cli(["codegen", "--check"]) == 0
