"""ARM64's NEON kernels (issue 40), tested here under emulation.

The kernels (kernels/cpu/kernels_neon.cpp, kernels_neonbf16.cpp, neon_isa.h) and the scalar
table are cross-compiled with Debian's ``aarch64-linux-gnu-g++`` and the extension's own C++
flags (turbogelu/_build.py), linked statically with tests/neon_harness/neon_harness.cpp and
run under ``qemu-aarch64``:

* ``neon`` on a CPU without the BF16 extension (qemu's cortex-a72) and ``neonbf16`` on one with
  it (qemu's max): every kernel of every row, dtype and direction, on every 16-bit input and the
  accuracy report's float32 grid, at every alignment and tail, equals the scalar table's bits
  (the scalar code is what the x86 suite holds equal to the replay);
* the NEON outputs on every float16 and bfloat16 input equal this machine's x86 kernels' bits
  (forward and default backward of every op, tier and program);
* the feature check that dispatch.cpp uses sees BF16 on the one CPU and not on the other;
* the extension's ARM64-specific translation units compile against torch's headers (objects
  only: torch has no ARM64 build here to link against).

Skipped, naming the packages, where the cross compiler or qemu is missing; .ci/run installs
both. Their speed is not measured here (README).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

import turbogelu
from turbogelu import _build

ROOT = Path(__file__).resolve().parent.parent
CXX, QEMU = "aarch64-linux-gnu-g++", "qemu-aarch64"
PACKAGES = "g++-aarch64-linux-gnu and qemu-user (apt-get install g++-aarch64-linux-gnu qemu-user)"
INCLUDES = [f"-I{ROOT / 'kernels' / 'include'}", f"-I{ROOT / 'kernels' / 'cpu'}"]
KERNELS = ("kernels_neon", "kernels_neonbf16", "kernels_scalar")
# qemu's CPUs: one without the optional BF16 extension, one with it
PLAIN_CPU, BF16_CPU = "cortex-a72", "max"

pytestmark = pytest.mark.skipif(
    shutil.which(CXX) is None or shutil.which(QEMU) is None,
    reason=f"the ARM64 emulation tests need Debian's {PACKAGES}",
)


def _run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def _compile(src: Path, obj: Path, extra: list[str] = ()) -> None:
    flags = [f for f in _build.CXX_FLAGS if f != "-fvisibility=hidden"]
    proc = _run([CXX, *flags, *INCLUDES, *extra, "-c", str(src), "-o", str(obj)])
    assert proc.returncode == 0, f"{src.name} did not compile for ARM64:\n{proc.stderr[-4000:]}"


def _torch_includes() -> list[str]:
    from torch.utils.cpp_extension import include_paths

    return [f"-I{p}" for p in include_paths()]


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    """The kernels' objects as setup.py compiles them on ARM64 (its flags and include paths,
    torch's among them), linked statically with the harness."""
    tmp = tmp_path_factory.mktemp("neon")
    objs = [tmp / f"{k}.o" for k in KERNELS]
    srcs = [ROOT / "kernels" / "cpu" / f"{k}.cpp" for k in KERNELS]
    torch_inc = _torch_includes()
    with ThreadPoolExecutor(2) as pool:  # two cores: the scalar table is the longest
        list(pool.map(lambda s, o: _compile(s, o, torch_inc), srcs, objs))
    exe = tmp / "neon_harness"
    flags = [f for f in _build.CXX_FLAGS if f != "-fvisibility=hidden"]
    src = ROOT / "tests" / "neon_harness" / "neon_harness.cpp"
    proc = _run([CXX, *flags, *INCLUDES, "-static", str(src), *map(str, objs), "-o", str(exe)])
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


def _emulate(exe: Path, cpu: str, *args: str) -> subprocess.CompletedProcess:
    return _run([QEMU, "-cpu", cpu, str(exe), *args], timeout=600)


def test_the_feature_check_sees_bf16_only_where_the_cpu_has_it(harness):
    assert _emulate(harness, PLAIN_CPU, "features").stdout.split() == ["bf16", "0"]
    assert _emulate(harness, BF16_CPU, "features").stdout.split() == ["bf16", "1"]


def _harness_run(harness, cpu, table, dump=None, least=100_000_000):
    proc = _emulate(harness, cpu, table, *([str(dump)] if dump else []))
    summary = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # the groups ran, and compared something: the families' rows, GELU's run-time kernels,
    # poly_family's programs and the softmax kernels
    for group in ("family:", "gelu run-time:", "poly_family:", "softmax:"):
        assert any(line.startswith(group) for line in summary), (group, summary)
    assert summary[-1].startswith(f"{table}: ") and summary[-1].endswith(" 0 differ"), summary
    assert int(summary[-1].split()[1]) > least  # elements compared
    return summary


@pytest.fixture(scope="module")
def neon_dumps(harness, tmp_path_factory) -> Path:
    dump = tmp_path_factory.mktemp("neon_dumps")
    _harness_run(harness, PLAIN_CPU, "neon", dump)
    return dump


def test_neon_equals_the_scalar_table_without_bf16(neon_dumps):
    assert len(list(neon_dumps.glob("*.bin"))) >= 90  # the run made the x86 comparison's files


def test_neonbf16_equals_the_scalar_table_with_bf16(harness):
    # its bfloat16 kernels (the rest are the neon table's, which the harness checks)
    _harness_run(harness, BF16_CPU, "neonbf16", least=10_000_000)


# ------------------------------------------------------------ the same bits as the x86 kernels

OPS = torch.ops.turbogelu
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def _patterns(dtype: torch.dtype, salt: int) -> torch.Tensor:
    """The harness's inputs(d, salt): every 16-bit pattern, permuted by salt."""
    i = np.arange(65536, dtype=np.uint32)
    h = ((i * (2 * salt + 1) + 12345 * salt) & 0xFFFF).astype(np.uint16)
    return torch.from_numpy(h.view(np.int16).copy()).view(dtype)


def _x86(op: str, program: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """This machine's forward and default backward of the harness's dump."""
    x, g, b = (_patterns(dtype, s) for s in range(3))
    tier = "paper" if program == "paper" else "accurate"
    kernel = "cells" if program == "cells" else "poly"
    with turbogelu.ops.use_cpu_kernel(kernel):
        if op == "swiglu":
            ga, gb = OPS.swiglu_backward(g, x, b, "default", tier)
            return {"forward": OPS.swiglu(x, b, tier=tier), "backward_a": ga, "backward_b": gb}
        if op.startswith("gelu_"):
            approx = op.removeprefix("gelu_")
            return {
                "forward": OPS.gelu(x, approx, tier=tier),
                "backward": OPS.gelu_backward(g, x, approx, "default", tier),
            }
        if op == "softcap":
            return {
                "forward": OPS.softcap(x, 1.0, tier=tier),
                "backward": OPS.softcap_backward(g, x, 1.0, "default", tier),
            }
        fwd = getattr(OPS, op)(x, tier=tier)
        return {"forward": fwd, "backward": getattr(OPS, f"{op}_backward")(g, x, "default", tier)}


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """Per element: equal bits, or both NaN."""
    ua, ub = a.view(torch.int16).numpy(), b.view(torch.int16).numpy()
    return (ua == ub) | (torch.isnan(a.float()).numpy() & torch.isnan(b.float()).numpy())


def test_neon_outputs_equal_the_x86_kernels_on_every_16_bit_input(neon_dumps):
    stems = sorted({p.name.split("_float16_")[0] for p in neon_dumps.glob("*_float16_*.bin")})
    ops = {s.rsplit("_", 1)[0] for s in stems}
    # every op of the table, GELU's two rows among them
    assert {"sigmoid", "tanh", "silu", "softcap", "swiglu", "exp2", "softplus"} <= ops
    assert {"gelu_none", "gelu_tanh"} <= ops
    assert {s.rsplit("_", 1)[1] for s in stems} == {"accurate", "paper", "cells"}
    compared = 0
    for stem in stems:
        op, program = stem.rsplit("_", 1)
        for dname, dtype in DTYPES.items():
            want = _x86(op, program, dtype)
            for part, w in want.items():
                raw = np.fromfile(neon_dumps / f"{stem}_{dname}_{part}.bin", dtype=np.int16)
                got = torch.from_numpy(raw).view(dtype)
                same = _same_bits(w, got)
                assert same.all(), (
                    f"{stem} {dname} {part}: {int((~same).sum())} of 65536 differ from x86, first "
                    f"at pattern {int(np.flatnonzero(~same)[0])}"
                )
                compared += 1
    assert compared >= 90


# ------------------------------------------------------------ the build's ARM64 objects


def test_the_arm64_translation_units_compile_against_torch_headers(tmp_path):
    """dispatch.cpp (which picks the NEON tables and asks for BF16) with torch's headers and
    the extension's flags, as setup.py builds it on ARM64; objects only."""
    src = ROOT / "kernels" / "cpu" / "dispatch.cpp"
    extra = [*_torch_includes(), "-fopenmp", "-DTORCH_EXTENSION_NAME=_C"]
    _compile(src, tmp_path / "dispatch.o", extra)
    assert (tmp_path / "dispatch.o").stat().st_size > 0
    out = _run(["aarch64-linux-gnu-objdump", "-f", str(tmp_path / "dispatch.o")]).stdout
    assert "aarch64" in out, out


def test_the_x86_build_has_no_neon_table():
    """On this x86-64 machine the NEON files compiled to stubs: the sets are x86's."""
    if os.uname().machine not in ("x86_64", "AMD64"):
        pytest.skip("an x86-64 check")
    assert not {"neon", "neonbf16"} & set(turbogelu.cpu_isas_available())
    with pytest.raises(RuntimeError, match="not available on this machine"):
        with turbogelu.ops.use_cpu_isa("neon"):
            pass


def test_the_readme_says_what_is_tested_on_arm64():
    row = next(ln for ln in (ROOT / "README.md").read_text().splitlines() if "ARM64 CPUs" in ln)
    assert "bit-tested under emulation" in row and "speed unmeasured" in row
    assert "python -m experiments bench" in row  # what to run to measure it
