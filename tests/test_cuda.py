"""The CUDA backend (kernels/cuda/).

Two parts:

* **build** (run everywhere): when setup.py decided to compile CUDA (turbogelu/_build.py), the
  five ops have CUDA kernels registered; the toolkit is found through a wrapper-script nvcc;
  and the PTX that nvcc makes from gelu_kernels.cu with the build's flags does exactly the
  template's arithmetic (its fma and mul counts, no flush-to-zero, no unfused add), stores 16
  bytes at a time after a peeled head whatever the tensor's address, which is what lets the
  CPU's exhaustive tests of family_eval.h speak for the GPU; ptxas gives every kernel at most 64
  registers and no spill, and the extension sizes its grids with the occupancy API.
* **run** (needs a GPU; skipped cleanly without one): every op, layout, dtype, special value
  and 16-byte offset on cuda gives the CPU kernels' bits, every bfloat16 / float16 input
  included, and a bfloat16 tensor past 2^31 elements on slices; opcheck, gradcheck, out= /
  in-place / errors, streams, torch.compile; the grid is one wave of what fits on an SM.
  ``tests/gpu_check.sh`` runs it (TURBOGELU_TEST_DEVICE=cpu: against the CPU, its dry run).

Only torch and pytest are needed (the GPU machine has no numpy/scipy guarantee): the oracle is
the CPU kernel, whose accuracy tests/test_accuracy.py proves against mpmath.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import time

import gpu_check
import pytest
import torch
from conftest import (
    APPROXIMATES,
    BACKWARDS,
    DTYPES,
    HALF_DTYPES,
    assert_same_bits,
    clamp_radius,
)

import turbogelu
from experiments.probes import OPS as BENCH_OPS
from turbogelu import _build

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

OPS = torch.ops.turbogelu
OP_NAMES = ("gelu", "gelu.out", "gelu_", "gelu_backward", "gelu_backward.out")
# TURBOGELU_TEST_DEVICE=cpu runs the GPU tests against the CPU kernels: a dry run that checks
# the tests themselves where there is no GPU (the CUDA-only checks then skip).
DEVICE = os.environ.get("TURBOGELU_TEST_DEVICE", "cuda")
HAVE_CUDA = torch.cuda.is_available()
RUN = HAVE_CUDA or DEVICE != "cuda"
needs_gpu = pytest.mark.skipif(not RUN, reason="no CUDA device (torch.cuda.is_available())")
cuda_only = pytest.mark.skipif(DEVICE != "cuda", reason="checks of the CUDA kernel itself")


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ================================================================== build (no GPU needed)


def _cuda_built_here() -> bool:
    try:
        return _build.want_cuda()[0]
    except (RuntimeError, ValueError):
        return False


def test_cuda_kernels_registered_when_built():
    if not _cuda_built_here():
        pytest.skip(f"the build has no CUDA here ({_build.want_cuda()[1]})")
    for op in OP_NAMES:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"turbogelu::{op}", "CUDA"), op


def _fake_toolkit(root):
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    nvcc = root / "bin" / "nvcc"
    nvcc.write_bytes(b"\x7fELF" + bytes(60))  # looks like a binary
    nvcc.chmod(0o755)
    return root


def test_find_cuda_home_follows_a_wrapper_script(tmp_path, monkeypatch):
    toolkit = _fake_toolkit(tmp_path / "cuda-99.1")
    wrapper_dir = tmp_path / "wrapper"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {toolkit}/bin/nvcc "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(wrapper_dir))
    assert _build.find_cuda_home() == str(toolkit)
    # an explicit CUDA_HOME wins
    monkeypatch.setenv("CUDA_HOME", "/somewhere/else")
    assert _build.find_cuda_home() == "/somewhere/else"


def test_find_cuda_home_follows_a_symlink(tmp_path, monkeypatch):
    toolkit = _fake_toolkit(tmp_path / "toolkit")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvcc").symlink_to(toolkit / "bin" / "nvcc")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(bindir))
    assert _build.find_cuda_home() == str(toolkit)


def test_turbogelu_cuda_switch(monkeypatch):
    monkeypatch.setenv("TURBOGELU_CUDA", "0")
    assert _build.want_cuda() == (False, "TURBOGELU_CUDA=0")
    monkeypatch.setenv("TURBOGELU_CUDA", "yes")
    with pytest.raises(ValueError, match="TURBOGELU_CUDA must be 0, 1 or unset"):
        _build.want_cuda()
    monkeypatch.setenv("TURBOGELU_CUDA", "1")
    if _build.find_cuda_home() is None or torch.version.cuda is None:
        with pytest.raises(RuntimeError, match="TURBOGELU_CUDA=1"):
            _build.want_cuda()
    else:
        assert _build.want_cuda()[0]


# ------------------------------------------------------------------ the PTX


def _nvcc() -> str | None:
    home = _build.find_cuda_home()
    if home is None:
        return None
    path = f"{home}/bin/nvcc"
    return path if shutil.which(path) else None


@pytest.fixture(scope="module")
def ptx_kernels() -> dict[str, str]:
    """{mangled kernel name: its PTX body}, compiled (about 3 s) with the build's flags."""
    if _nvcc() is None:
        pytest.skip("no CUDA toolkit")
    return gpu_check.compile_ptx(gpu_check.KERNELS_CU)


KUNROLL = 2  # kUnroll in elementwise.cuh: 16-byte packs per thread per loop trip
ELEMENT_BYTES = {"f": 4, "d": 8, "6__half": 2, "13__nv_bfloat16": 2}


def _kernel_params(name: str) -> tuple[str, int, int, int, bool]:
    """(storage type, elements per 16-byte access, coefficients, scheme, backward) from the
    name gelu_kernel<T, N, S, Backward>."""
    m = re.search(
        r"gelu_kernelI(f|d|6__half|13__nv_bfloat16)Li(\d+)ELNS_6SchemeE(\d)ELb(\d)E", name
    )
    assert m, name
    return m[1], 16 // ELEMENT_BYTES[m[1]], int(m[2]), int(m[3]), m[4] == "1"


def _generic(ptx_kernels):
    return {n: b for n, b in ptx_kernels.items() if "packed" not in n}


def _packed(ptx_kernels):
    """{(coefficients, backward): PTX} of packed_bf16_kernel<N, Backward>."""
    out = {}
    for name, body in ptx_kernels.items():
        m = re.search(r"packed_bf16_kernelILi(\d+)ELb(\d)E", name)
        if m:
            out[(int(m[1]), m[2] == "1")] = body
    return out


def _stores(body: str) -> tuple[int, int]:
    """(16-byte stores, element stores) to global memory."""
    wide = len(re.findall(r"\bst\.global\.v\d\.", body))
    return wide, len(re.findall(r"\bst\.global\.(?!v\d)", body))


def _loops(backward: bool) -> int:
    """Copies of the 16-byte loop: one per case of the inputs' offsets against out (x, and
    grad for the backward, each at out's offset in a 16-byte line or not)."""
    return 4 if backward else 2


def test_ptx_has_every_kernel(ptx_kernels):
    # 4 dtypes x 2 directions, degree 8, by Estrin's scheme (the shipped Horner programs are
    # GELU's rows of family_kernels.cu: tests/test_cuda_family.py), and the packed bfloat16
    # path: 3 degrees x 2 directions. One kernel per dtype and direction: no
    # one-element-per-access variant, every tensor, aligned or not, runs the 16-byte kernel.
    assert len(_generic(ptx_kernels)) == 8
    assert {_kernel_params(n)[3] for n in _generic(ptx_kernels)} == {1}  # Scheme::Estrin
    assert set(_packed(ptx_kernels)) == {(d + 1, b) for d in (3, 4, 6) for b in (False, True)}
    seen = {_kernel_params(n) for n in _generic(ptx_kernels)}
    assert {(t, v) for t, v, *_ in seen} == {
        ("f", 4),
        ("d", 2),
        ("6__half", 8),
        ("13__nv_bfloat16", 8),
    }


def _clamp_squares(body: str, ft: str) -> int:
    """Multiplies R*R: a float of the coefficient parameter (or its conversion to float64)
    by itself. Only the clamp R is squared: the coefficients and the scale never are. The
    parameter is read through an address register or by its own name (nvcc does the latter
    since the kernel copies the set into family_eval.h's program: still the parameter space)."""
    regs = set(re.findall(r"ld\.param\.f32\s+(%f\d+), \[(?:%rd\d+|[\w$]+)(?:\+-?\d+)?\];", body))
    for r in list(regs):
        regs |= set(re.findall(rf"cvt\.f64\.f32\s+(%fd\d+), {r};", body))
    squares = re.findall(rf"\bmul\.rn\.{ft}\s+%\w+, (%\w+), (%\w+);", body)
    return sum(a == b and a in regs for a, b in squares)


def test_ptx_does_the_templates_arithmetic(ptx_kernels):
    """Per element: N + 1 fused multiply-adds (z, the N - 1 steps of P, 1/2 + x P), no other
    floating add; multiplies: x*x and x*inner (or grad*d), plus Estrin's powers of z, plus
    R*R, hoisted out of the loops (a few times: the loop copies and the head and tail); no
    flush-to-zero; coefficients read from the parameter space (no local-memory copy)."""
    for name, body in _generic(ptx_kernels).items():
        t, _, n, scheme, backward = _kernel_params(name)
        ft = "f64" if t == "d" else "f32"
        fma = len(re.findall(rf"\bfma\.rn\.{ft}\b", body))
        mul = len(re.findall(rf"\bmul\.rn\.{ft}\b", body))
        assert fma > 0 and fma % (n + 1) == 0, (name, fma)
        elements = fma // (n + 1)
        powers = 0 if scheme == 0 else math.ceil(math.log2(n)) - 1  # z^2, z^4, ... used
        r2 = _clamp_squares(body, ft)
        assert 1 <= r2 <= KUNROLL * _loops(backward) + 1, (name, r2)
        assert mul == elements * (2 + powers) + r2, (name, mul, elements, r2)
        assert not re.search(rf"\b(add|sub)(\.rn)?\.{ft}\b", body), name
        assert ".ftz" not in body, name
        assert "ld.local" not in body and "st.local" not in body, name


def test_ptx_packed_kernels_do_the_programs_arithmetic_in_bfloat16(ptx_kernels):
    """Per pair of elements: N + 1 bfloat16x2 FMAs and 2 bfloat16x2 multiplies (+ R*R,
    hoisted), two lane compares; no float32 arithmetic at all."""
    for (n, backward), body in _packed(ptx_kernels).items():
        fma = len(re.findall(r"\bfma\.rn\.bf16x2\b", body))
        mul = len(re.findall(r"\bmul(\.rn)?\.bf16x2\b", body))
        assert fma > 0 and fma % (n + 1) == 0, (n, backward, fma)
        pairs = fma // (n + 1)
        assert 0 <= mul - 2 * pairs <= _loops(backward) + 1, (n, backward, mul, pairs)
        assert len(re.findall(r"\bset\.gt\.u32\.bf16x2\b", body)) == 2 * pairs
        assert not re.search(r"\b(fma|mul|add|sub)(\.rn)?\.f32\b", body), (n, backward)
        assert "ld.local" not in body and "st.local" not in body
        assert re.search(r"\bld\.global\.v4\.u32\b", body)


def test_ptx_kernels_store_16_bytes_after_a_peeled_head(ptx_kernels):
    """Every store is 16 bytes wide but one: the element store of the head (before out's
    first 16-byte boundary) and the tail, fewer than 2 x 16 bytes whatever the address. The
    16-byte loop is there once per case of the inputs' offsets: an input at out's offset in
    its 16-byte line is read 16 bytes at a time, any other element by element (each kernel
    compares the addresses: xor, then & 15). So a misaligned tensor no longer sends the
    whole tensor down element accesses."""
    kernels = [
        (_kernel_params(n)[0], _kernel_params(n)[4], b) for n, b in _generic(ptx_kernels).items()
    ]
    kernels += [("13__nv_bfloat16", bw, b) for (_, bw), b in _packed(ptx_kernels).items()]
    for t, backward, body in kernels:
        unroll = 1 if "bf16x2" in body else KUNROLL  # the packed loop moves one pack a trip
        wide, single = _stores(body)
        assert (wide, single) == (_loops(backward) * unroll, 1), (t, backward, wide, single)
        widths = re.findall(r"\b(?:ld|st)\.global\.v(\d)\.(?:f32|u32|f64|u64|b32|b64)\b", body)
        assert widths and all(int(w) * (8 if t == "d" else 4) == 16 for w in widths), t
        assert re.search(r"\bxor\.b64\b", body) and re.search(
            r"\band\.b64\s+%rd\d+, %rd\d+, 15;", body
        )


# ------------------------------------------------------------------ registers and grid


@pytest.fixture(scope="module")
def sm90_resources() -> dict[str, dict]:
    """{mangled kernel: registers, stack, local} of the sm_90 code, from ptxas (about 4 s)."""
    if _nvcc() is None:
        pytest.skip("no CUDA toolkit")
    return gpu_check.compile_resources("sm_90")


def test_kernels_keep_4_blocks_per_sm_without_spills(sm90_resources):
    """At most 64 registers and no spill (stack or local memory) in any kernel, so that at
    least 4 blocks of 256 threads (half the SM's threads) stay resident on sm_90; how many
    exactly is the launcher's to ask (cudaOccupancyMaxActiveBlocksPerMultiprocessor)."""
    described = {gpu_check.describe(n): u for n, u in sm90_resources.items()}
    assert None not in described and len(described) == 8 + 6
    for name, u in described.items():
        assert u["stack"] == 0 and u["local"] == 0, (name, u)
        assert u["regs"] <= 64 and gpu_check.blocks_per_sm(u["regs"]) >= 4, (name, u)


def test_launcher_sizes_the_grid_from_the_occupancy_api():
    """The built extension asks the runtime how many blocks of each kernel fit on an SM
    (its registers decide: 4 to 8 here) rather than assuming 8, which gave 1.33 or 2 waves
    of the kernels with more than 32 registers."""
    if not _cuda_built_here() or not torch._C._dispatch_has_kernel_for_dispatch_key(
        "turbogelu::gelu", "CUDA"
    ):
        pytest.skip("the extension here has no CUDA kernels")
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    so = gpu_check.extension_path()
    symbols = subprocess.run([nm, "-D", str(so)], capture_output=True, text=True, check=True)
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessor" in symbols.stdout
    assert hasattr(BENCH_OPS, "_cuda_last_launch")


# ================================================================== run (GPU)


def _mixed(n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Random values over about [-9, 9] with specials, +-R and its neighbours, subnormals."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
    f = torch.float64 if dtype == torch.float64 else torch.float32
    r = torch.tensor([clamp_radius(ap) for ap in APPROXIMATES], dtype=torch.float64).to(f)
    near = torch.cat([r, -r, torch.nextafter(r, r * 2), torch.nextafter(-r, -r * 2)])
    near = torch.cat([near, torch.nextafter(r, r / 2), torch.nextafter(-r, -r / 2)]).to(dtype)
    fi = torch.finfo(dtype)
    special = torch.tensor(
        [math.nan, math.inf, -math.inf, 0.0, -0.0, fi.max, -fi.max, fi.tiny, -fi.tiny],
        dtype=dtype,
    )
    tiny = torch.tensor([fi.tiny / 2, -fi.tiny / 4, fi.tiny / 1024], dtype=dtype)
    special = torch.cat([special, near, tiny])
    if n >= special.numel():
        pos = torch.randperm(n, generator=g)[: special.numel()]
        x[pos] = special
    return x


def all_inputs(dtype: torch.dtype) -> torch.Tensor:
    """Every bit pattern of a 16-bit dtype."""
    return torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)


def _same_as_cpu(actual_cuda: torch.Tensor, expected_cpu: torch.Tensor, msg: str = ""):
    assert actual_cuda.device.type == DEVICE, msg
    assert actual_cuda.stride() == expected_cpu.stride(), msg
    assert_same_bits(actual_cuda.cpu(), expected_cpu, msg)


def _layouts(dtype):
    g = torch.Generator().manual_seed(7)

    def randn(*shape):
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 3).to(dtype)

    return {
        "0dim": randn(),
        "empty": randn(0, 3),
        "n17": randn(17),
        "2d": randn(5, 41),
        "transposed": randn(41, 5).t(),
        "step2": randn(6, 34)[:, ::2],
        "expanded": randn(1, 9).expand(4, 9),
        "channels_last": randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
        "offset1": randn(1001)[1:],  # not 16-byte aligned: the one-element path
        "offset8": randn(1 << 12)[8:],  # aligned again
    }


LAYOUT_NAMES = list(_layouts(torch.float32))


def _to_cuda(t: torch.Tensor) -> torch.Tensor:
    """t on the GPU with the same sizes, strides and storage offset (views stay views)."""
    storage = t.untyped_storage()
    base = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),))
    moved = base.to(DEVICE, copy=True)
    return moved.as_strided(t.size(), t.stride(), t.storage_offset())


@needs_gpu
@pytest.mark.parametrize("layout", LAYOUT_NAMES)
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_every_op_gives_the_cpu_bits(dtype, layout):
    x = _layouts(dtype)[layout]
    xc = _to_cuda(x)
    assert xc.stride() == x.stride() and xc.storage_offset() == x.storage_offset()
    grad = _mixed(x.numel(), dtype, seed=3).reshape(x.shape)
    gc = grad.to(DEVICE)
    for ap in APPROXIMATES:
        _same_as_cpu(OPS.gelu(xc, ap), OPS.gelu(x, ap), f"gelu {ap}")
        for bw in BACKWARDS:
            _same_as_cpu(
                OPS.gelu_backward(gc, xc, ap, bw), OPS.gelu_backward(grad, x, ap, bw), f"bwd {bw}"
            )
        out = torch.empty_like(xc)
        OPS.gelu.out(xc, ap, out=out)
        _same_as_cpu(out, OPS.gelu(x, ap), "gelu.out")
        dout = torch.empty_like(xc)
        OPS.gelu_backward.out(gc, xc, ap, "matched", out=dout)
        _same_as_cpu(dout, OPS.gelu_backward(grad, x, ap, "matched"), "gelu_backward.out")
        if layout != "expanded":
            y = xc.clone()
            OPS.gelu_(y, ap)
            _same_as_cpu(y, OPS.gelu(x.clone(), ap), "gelu_")


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_sizes_tails_and_alignments(dtype):
    """Every tail length of the 16-byte path, every misalignment, and a size that makes the
    grid stride (more elements than resident threads)."""
    big = _mixed((1 << 22) + 77, dtype)
    big_c = big.to(DEVICE)
    for n in [*range(1, 40), 1000, 4095, 4096, 4097, 65_537]:
        for off in range(0, 9):
            xs = big[off : off + n]
            _same_as_cpu(OPS.gelu(big_c[off : off + n]), OPS.gelu(xs), f"n={n} off={off}")
    _same_as_cpu(OPS.gelu(big_c, "tanh"), OPS.gelu(big, "tanh"), "large")
    g = _mixed(big.numel(), dtype, seed=5)
    _same_as_cpu(OPS.gelu_backward(g.to(DEVICE), big_c), OPS.gelu_backward(g, big), "large bwd")
    # mixed alignment: x aligned, grad not
    gc = g.to(DEVICE)
    _same_as_cpu(
        OPS.gelu_backward(gc[1:1001], big_c[:1000]), OPS.gelu_backward(g[1:1001], big[:1000])
    )


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_every_16_byte_phase_of_x_grad_and_out(dtype):
    """x, grad and out each at every offset in a 16-byte line (8 elements cover every phase
    of each dtype): the kernels peel to out's boundary and read an input at another phase
    element by element; the bits stay the CPU's."""
    base = _mixed(1100, dtype, seed=8)
    grad = _mixed(1100, dtype, seed=9)
    base_c, grad_c = base.to(DEVICE), grad.to(DEVICE)
    for n in (13, 1003):
        for xo in range(8):
            x, xc = base[xo : xo + n], base_c[xo : xo + n]
            y = OPS.gelu(x)
            for oo in range(8):
                out = torch.empty(n + 8, dtype=dtype, device=DEVICE)[oo : oo + n]
                OPS.gelu.out(xc, out=out)
                _same_as_cpu(out, y, f"gelu.out n={n} x at {xo}, out at {oo}")
                for go in range(8):
                    g, gc = grad[go : go + n], grad_c[go : go + n]
                    dout = torch.empty(n + 8, dtype=dtype, device=DEVICE)[oo : oo + n]
                    OPS.gelu_backward.out(gc, xc, out=dout)
                    msg = f"gelu_backward.out n={n} x at {xo}, grad at {go}, out at {oo}"
                    _same_as_cpu(dout, OPS.gelu_backward(g, x), msg)


@needs_gpu
@cuda_only
def test_grid_is_one_wave_of_what_fits_on_an_sm():
    """The launcher sizes the grid from cudaOccupancyMaxActiveBlocksPerMultiprocessor: with
    more work than one wave, exactly SMs x blocks per SM; and on sm_90 blocks per SM is what
    the kernel's registers allow (cuobjdump on the built extension, when found)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    usage = {}
    cuobjdump = gpu_check.find_cuobjdump()
    if cuobjdump and (props.major, props.minor) == (9, 0):
        found = gpu_check.extension_resources(gpu_check.extension_path(), cuobjdump)
        usage = {gpu_check.describe(n): u for n, u in found.items() if u["arch"] == "sm_90"}
    probe = BENCH_OPS._cuda_last_launch
    for dtype in DTYPES:
        x = torch.randn(1 << 24, device=DEVICE).to(dtype)
        name = str(dtype).removeprefix("torch.")
        for direction in ("forward", "backward"):
            if direction == "forward":
                OPS.gelu(x)
            else:
                OPS.gelu_backward(x, x)
            blocks, per_sm, sms = probe()
            assert sms == props.multi_processor_count, (name, direction)
            assert 1 <= per_sm <= 2048 // 256, (name, direction, per_sm)
            assert blocks == sms * per_sm, (name, direction, blocks, sms, per_sm)
            # GELU's shipped program: its row of family_kernels.cu (gpu_check.describe's name)
            u = usage.get(f"{name} gelu_none (accurate) {direction} (degree 8)")
            if u is not None:
                assert per_sm == gpu_check.blocks_per_sm(u["regs"]), (name, direction, u)
        OPS.gelu(x[:100])
        assert probe()[0] == 1  # the head and tail alone: one block
    with turbogelu.ops.use_cuda_packed():
        xb = torch.randn(1 << 24, device=DEVICE, dtype=torch.bfloat16)
        OPS.gelu(xb)
        blocks, per_sm, sms = probe()
        assert blocks == sms * per_sm


@needs_gpu
@cuda_only
def test_bfloat16_beyond_2_31_elements_on_slices():
    """A bfloat16 tensor of 2^31 + 2^20 + 7 elements (indices past int32), every bit
    pattern repeated: forward, backward, in place on a misaligned view and the packed path,
    compared with the CPU (the packed path with itself on the same slice alone) on slices
    at the start, around 2^31 and at the end."""
    n = (1 << 31) + (1 << 20) + 7
    free, _ = torch.cuda.mem_get_info()
    if free < 4 * 2 * n:
        pytest.skip(f"needs {4 * 2 * n / 2**30:.0f} GiB of free GPU memory, has {free / 2**30:.0f}")
    pattern = all_inputs(torch.bfloat16).view(torch.int16).to(DEVICE)
    bits = torch.empty(n, dtype=torch.int16, device=DEVICE)
    full = n - n % pattern.numel()
    bits[:full].view(-1, pattern.numel()).copy_(pattern)
    bits[full:].copy_(pattern[: n - full])
    x = bits.view(torch.bfloat16)
    del bits
    length = 70_001
    starts = [0, (1 << 31) - length // 2, (1 << 31) - 5, (1 << 31) + 3, n - length]

    def slices(got, reference):
        for s0 in starts:
            xs = x[s0 : s0 + length]
            _same_as_cpu(got[s0 : s0 + length], reference(xs), f"slice at {s0}")

    slices(OPS.gelu(x), lambda xs: OPS.gelu(xs.cpu()))
    slices(
        OPS.gelu_backward(x, x, "tanh"), lambda xs: OPS.gelu_backward(xs.cpu(), xs.cpu(), "tanh")
    )
    y = x.clone()
    view = y[1:]  # 2 bytes off: the peeled path, in place, past 2^31
    OPS.gelu_(view)
    starts = [s0 - 1 for s0 in starts[1:]]
    for s0 in starts:
        expected = OPS.gelu(x[s0 + 1 : s0 + 1 + length].cpu())
        _same_as_cpu(view[s0 : s0 + length], expected, f"gelu_ slice at {s0}")
    del y, view
    with turbogelu.ops.use_cuda_packed():
        got = OPS.gelu(x)
        for s0 in starts:
            alone = OPS.gelu(x[s0 : s0 + length].clone())
            assert_same_bits(got[s0 : s0 + length].cpu(), alone.cpu(), f"packed slice at {s0}")


@needs_gpu
@pytest.mark.parametrize("approximate", APPROXIMATES)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_name)
def test_exhaustive_16bit_matches_cpu(dtype, approximate):
    """All 65,536 inputs, forward and every backward: the GPU's bits are the CPU's (whose
    accuracy test_accuracy.py proves exhaustively against the correctly rounded GELU)."""
    x = all_inputs(dtype)
    xc = x.to(DEVICE)
    _same_as_cpu(OPS.gelu(xc, approximate), OPS.gelu(x, approximate), "forward")
    ones = torch.ones_like(x)
    grad = _mixed(x.numel(), dtype, seed=11)
    for bw in BACKWARDS:
        _same_as_cpu(
            OPS.gelu_backward(ones.to(DEVICE), xc, approximate, bw),
            OPS.gelu_backward(ones, x, approximate, bw),
            f"backward {bw}",
        )
        _same_as_cpu(
            OPS.gelu_backward(grad.to(DEVICE), xc, approximate, bw),
            OPS.gelu_backward(grad, x, approximate, bw),
            f"backward {bw}, random grad",
        )


@needs_gpu
@pytest.mark.parametrize("approximate", APPROXIMATES)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_name)
def test_exhaustive_16bit_accuracy_vs_float64(dtype, approximate):
    """Also directly: every finite input within the core bounds of the float64 GELU
    (3e-5 forward, 6e-4 direct backward, plus half an ulp of the result's rounding)."""
    x = all_inputs(dtype).to(DEVICE)
    finite = torch.isfinite(x)
    x64 = x.double()
    exact = torch.nn.functional.gelu(x64, approximate=approximate)
    got = OPS.gelu(x, approximate).double()
    fi = torch.finfo(dtype)
    half_ulp = fi.eps * got.abs() / 2 + fi.tiny * fi.eps / 2  # (the second: subnormal results)
    assert ((got - exact).abs() <= 3e-5 + half_ulp)[finite].all()
    x64g = x64.clone().requires_grad_()
    torch.nn.functional.gelu(x64g, approximate=approximate).sum().backward()
    d = OPS.gelu_backward(torch.ones_like(x), x, approximate, "direct").double()
    half_ulp = fi.eps * d.abs() / 2
    assert ((d - x64g.grad).abs() <= 6e-4 + half_ulp)[finite].all()


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_special_values(dtype):
    nan, inf = math.nan, math.inf
    x = torch.tensor([nan, inf, -inf, 0.0, -0.0, 100.0, -100.0], dtype=dtype, device=DEVICE)
    for ap in APPROXIMATES:
        y = OPS.gelu(x, ap).cpu()
        assert math.isnan(y[0].item())
        assert y[1].item() == inf and y[5].item() == 100.0
        for i in (2, 4, 6):  # gelu(-inf) = gelu(-0) = gelu(-100) = -0.0
            assert y[i].item() == 0.0 and torch.signbit(y[i]).item(), (ap, i)
        assert y[3].item() == 0.0 and not torch.signbit(y[3]).item()
        d = OPS.gelu_backward(torch.ones_like(x), x, ap).cpu()
        assert math.isnan(d[0].item())
        assert d[1].item() == 1.0 and d[2].item() == 0.0 and d[3].item() == 0.5
        # a NaN gradient stays NaN in the clamped tails
        dn = OPS.gelu_backward(torch.full_like(x, nan), x, ap).cpu()
        assert torch.isnan(dn).all()


def _cuda_samples():
    """Each layout in two of the four dtypes, cycling through the forms and backwards."""
    samples = []
    for i, dtype in enumerate(DTYPES):
        for j, (name, x) in enumerate(_layouts(dtype).items()):
            if (i + j) % 2:
                continue
            x = _to_cuda(x)
            ap = APPROXIMATES[(j // 2) % 2]
            bw = BACKWARDS[(i + j) % 3]
            samples.append(pytest.param(x, ap, bw, id=f"{name}-{_name(dtype)}-{ap}-{bw}"))
    return samples


@needs_gpu
@pytest.mark.parametrize(("x", "approximate", "backward"), _cuda_samples() if RUN else [])
def test_opcheck_cuda(x, approximate, backward):
    grad = torch.randn(x.shape, device=DEVICE).to(x.dtype)
    grad = torch.empty_like(x).copy_(grad)
    xr = x.detach().clone().requires_grad_(x.dtype in (torch.float32, torch.float64))
    torch.library.opcheck(OPS.gelu.default, (xr, approximate), {"backward": backward})
    torch.library.opcheck(OPS.gelu.out, (x, approximate), {"out": torch.empty_like(x)})
    if not (x.stride() and 0 in x.stride()):  # not the self-overlapping expanded view
        torch.library.opcheck(OPS.gelu_.default, (x.clone(), approximate), {})
    torch.library.opcheck(OPS.gelu_backward.default, (grad, x, approximate, backward), {})
    torch.library.opcheck(
        OPS.gelu_backward.out, (grad, x, approximate, backward), {"out": torch.empty_like(x)}
    )


@needs_gpu
@pytest.mark.parametrize("approximate", APPROXIMATES)
def test_gradcheck_cuda(approximate):
    x = (torch.randn(64, dtype=torch.float64, device=DEVICE) * 3).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: turbogelu.gelu(t, approximate, backward="matched"), (x,), atol=1e-5
    )


@needs_gpu
def test_autograd_on_cuda_uses_the_cuda_backward():
    x = (torch.randn(4, 37, device=DEVICE) * 3).requires_grad_()
    g = torch.randn(4, 37, device=DEVICE)
    turbogelu.gelu(x, "tanh").backward(g)
    assert x.grad.device.type == DEVICE
    expected = OPS.gelu_backward(g.cpu(), x.detach().cpu(), "tanh")
    assert_same_bits(x.grad.cpu(), expected)


@needs_gpu
@cuda_only
def test_out_non_dense_and_errors():
    x = torch.randn(6, 4, device=DEVICE)
    out = torch.empty(6, 8, device=DEVICE)[:, ::2]
    OPS.gelu.out(x, "tanh", out=out)
    assert_same_bits(out.cpu(), OPS.gelu(x.cpu(), "tanh"))
    with pytest.raises(RuntimeError, match="out has shape"):
        OPS.gelu.out(x, out=torch.empty(5, device=DEVICE))
    with pytest.raises(TypeError, match="out has dtype"):
        OPS.gelu.out(x, out=torch.empty(6, 4, device=DEVICE, dtype=torch.float16))
    with pytest.raises(TypeError, match="supported dtypes are"):
        OPS.gelu(torch.ones(3, device=DEVICE, dtype=torch.int32))
    with pytest.raises(ValueError, match="approximate must be"):
        OPS.gelu(x, "foo")
    with pytest.raises(RuntimeError, match="CUDA kernel"):
        OPS.gelu.out(x, out=torch.empty(6, 4))  # out on the CPU
    with pytest.raises(RuntimeError, match="CUDA kernel"):
        OPS.gelu_backward(torch.randn(6, 4), x)
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_(x.clone().requires_grad_())


@needs_gpu
@cuda_only
def test_runs_on_the_current_stream_and_device():
    x = _mixed(1 << 20, torch.float32).to(DEVICE)
    expected = OPS.gelu(x.cpu())
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = OPS.gelu(x)
        OPS.gelu_(x)  # ordered after y on s
    s.synchronize()
    assert_same_bits(y.cpu(), expected)
    assert_same_bits(x.cpu(), expected)
    if torch.cuda.device_count() > 1:
        x1 = _mixed(4097, torch.float32).to("cuda:1")
        y1 = OPS.gelu(x1)  # from a current device of cuda:0: the guard switches
        assert y1.device == x1.device
        assert_same_bits(y1.cpu(), OPS.gelu(x1.cpu()))


@needs_gpu
@cuda_only
def test_packed_bf16_is_the_lab_replay():
    """The opt-in packed path gives, for every bfloat16 input (aligned or not, any tail), the
    bits of the lab's replay of packed bfloat16 arithmetic (turbogelu/approx/packed.py), whose
    error tests/test_packed.py bounds; off, and for float16, nothing changes."""
    for lab_dependency in ("numpy", "scipy", "mpmath"):  # the lab's replay needs them
        pytest.importorskip(lab_dependency)
    from turbogelu.approx import packed

    x = all_inputs(torch.bfloat16)
    x64 = x.double().numpy()
    xc = x.to(DEVICE)
    grad = _mixed(x.numel(), torch.bfloat16, seed=4)
    default = OPS.gelu(xc).cpu()

    def same(actual, expected, msg):
        nan = torch.isnan(expected)
        assert torch.equal(torch.isnan(actual), nan), msg
        assert torch.equal(actual[~nan], expected[~nan]), msg  # (-0.0 == 0.0 here)

    with turbogelu.ops.use_cuda_packed():
        for ap in APPROXIMATES:
            fwd = packed.replay(packed.load(ap, "forward"), x64)
            d = packed.replay(packed.load(ap, "backward"), x64)
            want = torch.from_numpy(fwd).to(torch.bfloat16)
            same(OPS.gelu(xc, ap).cpu(), want, f"forward {ap}")
            same(OPS.gelu(xc[3:], ap).cpu(), want[3:], f"forward {ap}, unaligned")
            same(OPS.gelu(xc[:4101], ap).cpu(), want[:4101], f"forward {ap}, tail")
            for bw in BACKWARDS:  # one packed backward fit for every choice
                got = OPS.gelu_backward(torch.ones_like(xc), xc, ap, bw).cpu()
                same(got, torch.from_numpy(d).to(torch.bfloat16), f"backward {ap} {bw}")
            want_g = (grad.double() * torch.from_numpy(d).double()).to(torch.bfloat16)
            same(OPS.gelu_backward(grad.to(DEVICE), xc, ap).cpu(), want_g, f"grad x d {ap}")
        h = all_inputs(torch.float16).to(DEVICE)
        assert_same_bits(OPS.gelu(h).cpu(), OPS.gelu(h.cpu()))  # float16: not packed
    assert_same_bits(OPS.gelu(xc).cpu(), default)  # off again


@needs_gpu
def test_estrin_scheme_on_cuda():
    x = _mixed(10_001, torch.float32).to(DEVICE)
    previous = BENCH_OPS._set_poly_scheme("estrin")
    try:
        y = OPS.gelu(x)
        expected = OPS.gelu(x.cpu())
    finally:
        BENCH_OPS._set_poly_scheme(previous)
    assert_same_bits(y.cpu(), expected)


@needs_gpu
@cuda_only
def test_compile_fullgraph_on_cuda(dynamo_reset):
    pytest.importorskip("triton")

    def f(x):
        return turbogelu.gelu(x * 2, "tanh") + 1

    x = torch.randn(4099, device=DEVICE)
    compiled = torch.compile(f, fullgraph=True)
    assert_same_bits(compiled(x), f(x))


# ================================================================== the GPU benchmark, faked


class _FakeEvent:
    """torch.cuda.Event on the CPU clock (the ops run synchronously on CPU tensors)."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):  # milliseconds, as CUDA's
        return (other.t - self.t) * 1e3


def test_bench_cuda_pipeline_with_a_fake_device(monkeypatch, tmp_path, capsys):
    """python -m experiments.bench_cuda (one size, and --sizes), end to end, on CPU tensors
    behind a fake torch.cuda (the real run is tests/gpu_check.sh's)."""
    from experiments import bench_cuda

    def cpu_inputs(dtype, size, seed=0, device="cuda"):
        g = torch.Generator().manual_seed(seed)
        dt = getattr(torch, dtype)
        return (torch.randn(size, generator=g) * 3).to(dt), torch.randn(size, generator=g).to(dt)

    info = {"gpu": "Fake GPU", "capability": "9.0", "sms": 132, "memory_gib": 1.0}
    monkeypatch.setattr(bench_cuda, "_inputs", cpu_inputs)
    monkeypatch.setattr(
        bench_cuda, "device_info", lambda device="cuda": {**info, "torch": "x", "cuda": "y"}
    )
    monkeypatch.setattr(bench_cuda, "ROOFLINE_FROM", 1 << 12)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)

    out = tmp_path / "ops.jsonl"
    argv = ["--size", "4096", "--rounds", "3", "--calls", "2", "--out", str(out)]
    assert bench_cuda.main(argv) == 0
    text = capsys.readouterr().out
    assert (
        "GPU: Fake GPU (sm_90, 132 SMs" in text and "| forward | bfloat16 | 4096 | copy |" in text
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # forward: 7 methods (8 with packed for bfloat16), backward: 6 (7)
    assert len(rows) == 3 * 7 + 1 + 3 * 6 + 1 and {r["bench"] for r in rows} == {"cuda-ops"}
    packed = {(r["direction"], r["dtype"]) for r in rows if r["method"] == "turbogelu (packed)"}
    assert packed == {("forward", "bfloat16"), ("backward", "bfloat16")}
    assert {r["method"] for r in rows} >= {"turbogelu (misaligned)", "turbogelu (wrapper)"}
    assert all(r["gb_per_s"] > 0 and r["rounds"] == 3 for r in rows)
    assert "of the roofline" in text and "F.gelu" in text
    assert "PASS: " not in text and "FAIL: " not in text  # 4096 is no judged size
    assert "reported: forward  float32" in text

    sweep = tmp_path / "sweep.jsonl"
    args = ["--sizes", "1024,8192", "--dtypes", "float16", "--rounds", "2", "--out", str(sweep)]
    assert bench_cuda.main(args) == 0
    rows = [json.loads(line) for line in sweep.read_text().splitlines()]
    assert {r["size"] for r in rows} == {1024, 8192} and len(rows) == 2 * (7 + 6)
    assert {r["calls"] for r in rows} == {100}  # min(100, 2^27 / size)


def test_bench_cuda_judges_its_bars_into_the_exit_status(monkeypatch):
    """--judge: 3 when the forward op is above 1.05x F.gelu at --op-size or the op beyond
    1.10x the copy / mul limit at --roofline-size; other rows are reported, never judged."""
    from experiments import bench_cuda

    def row(direction, dtype, size, method, us):
        return {"direction": direction, "dtype": dtype, "size": size, "method": method,
                "median_us": us, "gb_per_s": 1.0, "per_limit": None}  # fmt: skip

    def rows(op_us, limit_ratio, wrapper_us=50.0):
        out = [
            row("forward", "float32", 1 << 20, "turbogelu", op_us),
            row("forward", "float32", 1 << 20, "turbogelu (wrapper)", wrapper_us),
            row("forward", "float32", 1 << 20, "torch exact", 10.0),
            row("backward", "float32", 1 << 20, "turbogelu", 99.0),  # not judged at 1M
            row("backward", "float32", 1 << 20, "torch exact", 10.0),
        ]
        for d in ("forward", "backward"):
            out.append({**row(d, "float32", 1 << 28, "turbogelu", 1.0), "per_limit": limit_ratio})
            slow = {**row(d, "float32", 1 << 28, "turbogelu (misaligned)", 2.0), "per_limit": 9.0}
            out.append(slow)  # reported only
        return out

    def judged(rs):
        return [ok for ok, _ in bench_cuda.verdicts(rs) if ok is not None]

    assert judged(rows(10.5, 1.10)) == [True, True, True]
    assert judged(rows(10.6, 1.10)) == [False, True, True]
    assert judged(rows(10.0, 1.11)) == [True, False, False]
    lines = bench_cuda.render_verdicts(bench_cuda.verdicts(rows(10.0, 1.0)))
    assert lines[0].startswith("PASS: forward  float32     1048576: turbogelu 10.0 us, 1.000 x")
    assert "the wrapper turbogelu.gelu: 50.0 us, 5.000 x (reported)" in lines[0]
    assert any(line.startswith("reported: ") and "misaligned" in line for line in lines)
