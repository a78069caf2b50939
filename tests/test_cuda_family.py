"""The activation family's CUDA backend (kernels/cuda/family_kernels.cu, ops.cpp).

As tests/test_cuda.py for GELU, two parts:

* **build** (run everywhere): when the build has CUDA, every family op has a CUDA kernel; the
  PTX that nvcc makes from family_kernels.cu holds exactly the kernels TG_FAMILY_OPS asks for
  (family.h: a line there, not a kernel file, adds an op), each doing the template's arithmetic
  (family_eval.h: its fma and mul counts per element from the program's form and degree, no
  division, no transcendental, no flush-to-zero, no local memory), storing 16 bytes at a time
  after the peeled head; ptxas gives every kernel at most 64 registers and no spill, as GELU's.
* **run** (needs a GPU; skipped cleanly without one): every op, dtype, layout, tail and 16-byte
  offset of each operand on cuda gives the CPU kernels' bits, every float16 / bfloat16 input
  included (the CPU kernels are bit-identical to the numpy replay); opcheck, autograd, errors,
  the grid.
* **the packed bfloat16 path** (the paper tier under turbogelu.ops.use_cuda_packed()): its
  kernels from the op list, their bf16x2 arithmetic, stores and registers, and that the built
  extension holds them (no GPU needed); on a GPU, every bfloat16 input through each op equals
  the lab's replay (turbogelu/approx/packed_family.py) bit for bit, and the switch leaves the
  accurate tier and float16 alone.

``tests/gpu_check.sh`` runs it with test_cuda.py (TURBOGELU_TEST_DEVICE=cpu: its dry run,
against the CPU).

Only torch and pytest are needed at run time, as test_cuda.py.
"""

from __future__ import annotations

import itertools
import math
import re

import gpu_check
import pytest
import torch
from conftest import BACKWARDS, DTYPES, HALF_DTYPES, assert_same_bits
from op_references import assert_within_an_ulp
from test_cuda import (
    DEVICE,
    KUNROLL,
    _cuda_built_here,
    _layouts,
    _mixed,
    _name,
    _nvcc,
    _same_as_cpu,
    _to_cuda,
    all_inputs,
    cuda_only,
    needs_gpu,
)

import turbogelu
from experiments.probes import OPS as BENCH_OPS
from turbogelu import family

# The CPU oracle runs the polynomials, the programs CUDA runs: its default on AVX-512 CPUs is
# cells (test_family_cells.py), which differ from them by up to their error (the GPU check's
# first run on an H200's Xeon: 50 sigmoid and tanh cases off by about 1e-5).
pytestmark = pytest.mark.usefixtures("poly_program")

OPS = torch.ops.turbogelu
FAMILY = gpu_check.family_ops()  # [(op, function, kind)] of TG_FAMILY_OPS
# {"<function>_<tier>": (forward form, degree, in x^2, derivative form, degree, in x^2)}
SHAPES = gpu_check.family_shapes()
# GELU's programs, rows of the same kernels (TG_GELU_OPS; the accurate tier only), and their
# shapes (in x^2, the window decided on x^2: family.h's TG_GELU_SHAPE).
GELU = gpu_check.gelu_ops()
GELU_SHAPES = gpu_check.gelu_shapes()
KERNEL_SHAPES = {**SHAPES, **GELU_SHAPES}
TIERS = ("accurate", "paper")
KIND = {op: kind for op, _, kind in FAMILY}
OP_NAMES = [op for op, _, _ in FAMILY]
CAPS = (2.5, 50.0)  # softcap's cap: a small one, and the LLM task's logit cap
ELEMENTS = {"float32": 4, "float64": 2, "float16": 8, "bfloat16": 8}  # per 16-byte access


def test_the_op_list_is_the_python_one():
    """The header's list (parsed here for the kernel counts) is the ops turbogelu ships."""
    assert tuple(OP_NAMES) == turbogelu.family.FUNCTIONS
    assert {f"{fn}_{tier}" for _, fn, _ in FAMILY for tier in TIERS} == set(SHAPES)
    assert {k for _, _, k in FAMILY} <= set(gpu_check.FAMILY_KINDS)


# ================================================================== build (no GPU needed)


def _overloads(op: str) -> list[str]:
    names = [op, f"{op}.out", f"{op}_backward", f"{op}_backward.out"]
    return names + ([] if KIND[op] == "Gated" else [f"{op}_"])


def test_family_cuda_kernels_registered_when_built():
    if not _cuda_built_here():
        pytest.skip("the build has no CUDA here")
    for op in OP_NAMES:
        for name in _overloads(op):
            key = f"turbogelu::{name}"
            assert torch._C._dispatch_has_kernel_for_dispatch_key(key, "CUDA"), name
            assert torch._C._dispatch_has_kernel_for_dispatch_key(key, "CPU"), name


@pytest.fixture(scope="module")
def family_ptx() -> dict[str, str]:
    """{mangled kernel name: PTX} of family_kernels.cu with the build's flags (about 10 s)."""
    if _nvcc() is None:
        pytest.skip("no CUDA toolkit")
    return gpu_check.compile_ptx(gpu_check.FAMILY_CU)


def _expected_kernels() -> set[tuple[str, str, str, str]]:
    """(dtype, body, function, kind) for every op of TG_FAMILY_OPS in both tiers and every
    row of TG_GELU_OPS in the accurate tier: Plain and Scaled have a unary (forward) and a
    binary (backward) body, Gated a binary (forward) and a pair (backward); ops of one
    function and kind would share them."""
    bodies = {"Plain": ("unary", "binary"), "Scaled": ("unary", "binary"),
              "Gated": ("binary", "pair")}  # fmt: skip
    rows = [(fn, kind, tier) for _, fn, kind in FAMILY for tier in TIERS]
    rows += [(fn, kind, "accurate") for _, fn, kind in GELU]
    return {
        (dtype, body, f"{fn}_{tier}", kind)
        for fn, kind, tier in rows
        for body in bodies[kind]
        for dtype in ELEMENTS
    }


def _eval_counts(form: str, degree: int, in_y: bool) -> tuple[int, int, int]:
    """(fma, mul, add) of family_eval<form, degree + 1, in_y>: v = |x| (or |x| |x|),
    z = fma(v, scale, -1), degree Horner steps, then the reconstruction (HalfPlusOdd
    fma(x, p, 1/2); Odd x p; XHalfPlusEven x fma(x, p, 1/2); XHalfPlus and XHalfPlusNonNeg
    x 1/2 + p; HalfPlusSigned 1/2 + copysign(p, x), a bit operation; Even p; the floors at +0
    are a compare and a select).
    exp2 (family_eval.h's exp2_eval): no |x|; [x - 1/2 (Floor),] + magic, - magic, f by one
    fma, degree Horner steps, and p 2^floor(n/2) 2^ceil(n/2): two multiplies."""
    if form.startswith("Exp2"):
        return 1 + degree, 2, 2 + (form == "Exp2Floor")
    fma = 1 + degree + (form in ("HalfPlusOdd", "XHalfPlusEven"))
    mul = int(in_y) + int(form in ("Odd", "XHalfPlusEven", "XHalfPlus", "XHalfPlusNonNeg"))
    return fma, mul, int(form in ("XHalfPlus", "XHalfPlusNonNeg", "HalfPlusSigned"))


def _per_element(body: str, shapes: str, kind: str) -> tuple[int, int, int]:
    """(fma, mul, add) per element of a kernel (family_eval.h's functions):
    Plain backward grad * f'(x); Scaled q = x * inv, forward cap * f(q), backward grad * f'(q);
    Gated forward f(a) * b, backward ((grad * b) * f'(a), grad * f(a)). The gated backward's
    two programs share |x| and, when both are in x^2, |x| |x|."""
    ff, df, yf, fd, dd, yd = KERNEL_SHAPES[shapes]
    f, d = _eval_counts(ff, df, yf), _eval_counts(fd, dd, yd)
    if body == "pair":
        shared = int(yf and yd)
        return f[0] + d[0], f[1] + d[1] + 3 - shared, f[2] + d[2]
    if body == "unary":
        return f[0], f[1] + (2 if kind == "Scaled" else 0), f[2]
    if kind == "Gated":
        return f[0], f[1] + 1, f[2]
    return d[0], d[1] + (2 if kind == "Scaled" else 1), d[2]


def _clamp_squares(ptx: str, ft: str) -> int:
    """Multiplies of a float read from the parameter space (or its conversion to float64) by
    itself: GELU's clamp^2 (no coefficient or scale is ever squared)."""
    regs = set(re.findall(r"ld\.param\.f32\s+(%f\d+), \[(?:%rd\d+|[\w$]+)(?:\+-?\d+)?\];", ptx))
    for r in list(regs):
        regs |= set(re.findall(rf"cvt\.f64\.f32\s+(%fd\d+), {r};", ptx))
    squares = re.findall(rf"\bmul\.rn\.{ft}\s+%\w+, (%\w+), (%\w+);", ptx)
    return sum(a == b and a in regs for a, b in squares)


def _layout(body: str, dtype: str) -> tuple[int, int]:
    """(16-byte loops, packs per thread per trip) of a kernel. The loops: one per case of the
    checked operands' 16-byte offsets against out's (elementwise.cuh's with_phases): unary
    2 (x), binary 4 (both inputs), pair 2 (all five at out's offset, or all element-wise).
    The pair body keeps one pack in flight for the 16-bit types (PairFn::unroll)."""
    loops = {"unary": 2, "binary": 4, "pair": 2}[body]
    unroll = 1 if body == "pair" and ELEMENTS[dtype] == 8 else KUNROLL
    return loops, unroll


def _parsed(family_ptx):
    """{(dtype, body, shapes, kind): PTX} of the float32-arithmetic kernels (family_kernel);
    every other kernel of the file must be a packed one (_packed)."""
    out = {}
    for name, ptx in family_ptx.items():
        found = gpu_check.family_kernel(name)
        if found is None:
            assert gpu_check.packed_family_kernel(name) is not None, f"an unknown kernel: {name}"
            continue
        out[found] = ptx
    return out


def _packed(family_ptx):
    """{(body, shapes, kind): PTX} of the packed bfloat16 kernels (packed_family_kernel)."""
    out = {}
    for name, ptx in family_ptx.items():
        if (found := gpu_check.packed_family_kernel(name)) is not None:
            out[found] = ptx
    return out


def test_family_ptx_kernels_come_from_the_op_list(family_ptx):
    """One kernel per (dtype, body, function and tier, kind) that TG_FAMILY_OPS and
    TG_GELU_OPS ask for, no other: 7 ops x 2 tiers x 2 bodies x 4 dtypes = 112, and GELU's
    2 rows x 2 bodies x 4 dtypes = 16, today."""
    parsed = _parsed(family_ptx)
    assert len(parsed) + len(_packed(family_ptx)) == len(family_ptx)
    assert set(parsed) == _expected_kernels()
    assert len(parsed) == 2 * (len(TIERS) * len(FAMILY) + len(GELU)) * len(ELEMENTS) == 128


def test_family_ptx_does_the_templates_arithmetic(family_ptx):
    """Per element exactly the template's fused multiply-adds and multiplies (the head and
    tail element, and each loop's V x unroll elements: loops x unroll x V + 1 copies), one
    |x| (the gated backward's two programs share it); no floating add but the XHalfPlus
    form's x/2 + p (the paper tier's SiLU), no division,
    reciprocal, square root or special-function instruction (the transcendental is the
    polynomial), no flush-to-zero; the programs read from the parameter space, no local
    memory. (exp2's 2^n is integer arithmetic on k's bits: shifts and adds, not counted.)
    GELU's rows decide the window on x^2 against clamp^2: no |x|, and clamp * clamp from the
    parameter, hoisted out of the loops (once per loop copy and the head and tail at most)."""
    for (dtype, body, fn, kind), ptx in _parsed(family_ptx).items():
        what = (dtype, body, fn, kind)
        ft = "f64" if dtype == "float64" else "f32"
        fma_e, mul_e, add_e = _per_element(body, fn, kind)
        loops, unroll = _layout(body, dtype)
        copies = loops * unroll * ELEMENTS[dtype] + 1
        in_x2 = fn in GELU_SHAPES
        squares = _clamp_squares(ptx, ft) if in_x2 else 0
        assert (1 <= squares <= loops * unroll + 1) if in_x2 else squares == 0, (what, squares)
        assert len(re.findall(rf"\bfma\.rn\.{ft}\b", ptx)) == copies * fma_e, what
        assert len(re.findall(rf"\bmul\.rn\.{ft}\b", ptx)) == copies * mul_e + squares, what
        assert len(re.findall(rf"\badd\.rn\.{ft}\b", ptx)) == copies * add_e, what
        uses_abs = not in_x2 and not SHAPES[fn][0].startswith("Exp2")  # exp2 has no |x|
        assert len(re.findall(rf"\babs\.{ft}\b", ptx)) == copies * uses_abs, what
        # No max / min: exp2's window is two compares and selects, so that NaN passes (PTX's
        # max.f32 returns the operand that is not NaN).
        assert not re.search(r"\b(max|min)\.f(32|64)\b", ptx), what
        assert not re.search(r"\b(add|sub)\.f(16|32|64)\b|\bsub\.rn\.f(16|32|64)\b", ptx), what
        assert not re.search(r"\b(div|rcp|sqrt|rsqrt|ex2|lg2|sin|cos|tanh)\.", ptx), what
        assert ".ftz" not in ptx and ".approx" not in ptx, what
        assert "ld.local" not in ptx and "st.local" not in ptx, what
        assert re.search(r"\bld\.param\.f32\b", ptx), what


def test_family_ptx_stores_16_bytes_after_a_peeled_head(family_ptx):
    """out (the first output) is stored 16 bytes at a time after the head, in every loop; the
    gated backward's second output too where it is at out's offset, else element by element;
    the head and tail one element per output. Every vector access is 16 bytes, and each
    kernel compares the operands' offsets (xor, & 15)."""
    for (dtype, body, fn, kind), ptx in _parsed(family_ptx).items():
        what = (dtype, body, fn, kind)
        loops, unroll = _layout(body, dtype)
        wide = len(re.findall(r"\bst\.global\.v\d\.", ptx))
        single = len(re.findall(r"\bst\.global\.(?!v\d)", ptx))
        if body == "pair":  # out_a in both loops, out_b in the aligned one; out_b element-wise
            assert (wide, single) == (3 * unroll, unroll * ELEMENTS[dtype] + 2), what
        else:
            assert (wide, single) == (loops * unroll, 1), what
        widths = re.findall(r"\b(?:ld|st)\.global\.v(\d)\.(?:f32|u32|f64|u64|b32|b64)\b", ptx)
        assert widths and all(int(w) * (8 if dtype == "float64" else 4) == 16 for w in widths)
        assert re.search(r"\bxor\.b64\b", ptx), what
        assert re.search(r"\band\.b64\s+%rd\d+, %rd\d+, 15;", ptx), what


# ------------------------------------------------------------------ the packed bfloat16 path


# The ops with a packed path: every op of TG_FAMILY_OPS whose paper-tier forward is a
# polynomial form (family_kernels.cu's kPackable: exp2's range reduction has none).
PACKABLE = [f for f in FAMILY if not SHAPES[f"{f[1]}_paper"][0].startswith("Exp2")]


def _expected_packed() -> set[tuple[str, str, str]]:
    """(body, function_paper, kind) for every packable op: the packed path runs the paper
    tier only, on bfloat16 only: 6 ops x 2 bodies = 12 kernels (softplus's: its paper tier
    holds the accurate programs, compiled alike and never run: the ops refuse the tier)."""
    bodies = {"Plain": ("unary", "binary"), "Scaled": ("unary", "binary"),
              "Gated": ("binary", "pair")}  # fmt: skip
    return {(body, f"{fn}_paper", kind) for _, fn, kind in PACKABLE for body in bodies[kind]}


def test_packed_family_kernels_come_from_the_op_list(family_ptx):
    packed = _packed(family_ptx)
    assert set(packed) == _expected_packed()
    assert len(packed) == 2 * len(PACKABLE) == 12
    assert [f[0] for f in FAMILY if f not in PACKABLE] == ["exp2"]


def test_packed_family_ptx_does_the_templates_arithmetic_in_bf16x2(family_ptx):
    """The float32 kernels' per-element arithmetic (_per_element), each operation one packed
    bfloat16 instruction for two elements: per pair exactly the template's fma.rn.bf16x2,
    mul.rn.bf16x2 and add.rn.bf16x2 (the head and tail element, and each loop's pairs:
    loops x unroll x 4 + 1 copies), each with .rn (a mul and an add without it may be fused by
    ptxas); two lane compares per program (the window and the sign); no float32 (or any
    other) arithmetic, no division or transcendental, no local memory; the programs read from
    the parameter space. The gated backward's two programs each take their own |x| and
    |x| |x| (the packed instructions are not merged across programs as the float32 ones are),
    one more of each than _per_element counts for it."""
    for (body, fn, kind), ptx in _packed(family_ptx).items():
        what = (body, fn, kind)
        fma_e, mul_e, add_e = _per_element(body, fn, kind)
        loops, unroll = _layout(body, "bfloat16")
        copies = loops * unroll * 4 + 1
        programs = 2 if body == "pair" else 1
        shared = int(body == "pair" and SHAPES[fn][2] and SHAPES[fn][5])
        assert len(re.findall(r"\bfma\.rn\.bf16x2\b", ptx)) == copies * fma_e, what
        assert len(re.findall(r"\bmul\.rn\.bf16x2\b", ptx)) == copies * (mul_e + shared), what
        assert len(re.findall(r"\badd\.rn\.bf16x2\b", ptx)) == copies * add_e, what
        assert not re.search(r"\b(mul|add|sub)\.bf16x2\b", ptx), what  # without .rn
        assert len(re.findall(r"\babs\.bf16x2\b", ptx)) == copies * programs, what
        assert len(re.findall(r"\bset\.gt\.u32\.bf16x2\b", ptx)) == copies * 2 * programs, what
        assert not re.search(r"\b(fma|mul|add|sub)(\.rn)?\.(f16|f16x2|bf16|f32|f64)\b", ptx), what
        assert not re.search(r"\b(div|rcp|sqrt|rsqrt|ex2|lg2|sin|cos|tanh)\.", ptx), what
        assert ".ftz" not in ptx and ".approx" not in ptx, what
        assert "ld.local" not in ptx and "st.local" not in ptx, what
        assert re.search(r"\bld\.param\.f32\b", ptx), what


def test_packed_family_ptx_stores_16_bytes_after_a_peeled_head(family_ptx):
    """The layout of the float32-arithmetic bfloat16 kernels (elementwise_pairs shares
    elementwise's phases, head and tail): the same 16-byte and element stores."""
    for (body, fn, kind), ptx in _packed(family_ptx).items():
        what = (body, fn, kind)
        loops, unroll = _layout(body, "bfloat16")
        wide = len(re.findall(r"\bst\.global\.v\d\.", ptx))
        single = len(re.findall(r"\bst\.global\.(?!v\d)", ptx))
        if body == "pair":
            assert (wide, single) == (3 * unroll, unroll * 8 + 2), what
        else:
            assert (wide, single) == (loops * unroll, 1), what
        widths = re.findall(r"\b(?:ld|st)\.global\.v(\d)\.(?:f32|u32|f64|u64|b32|b64)\b", ptx)
        assert widths and all(int(w) * 4 == 16 for w in widths), what


def test_packed_family_kernels_are_in_the_built_extension():
    """The extension built here holds the packed kernels' sm_90 code (cuobjdump), within the
    limit of every kernel: at most 64 registers, no spill."""
    if not _cuda_built_here():
        pytest.skip("the build has no CUDA here")
    cuobjdump = gpu_check.find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("no cuobjdump")
    usage = gpu_check.extension_resources(gpu_check.extension_path(), cuobjdump)
    packed = {gpu_check.packed_family_kernel(n): u for n, u in usage.items()}
    packed.pop(None, None)
    assert set(packed) == _expected_packed()
    for what, u in packed.items():
        assert u["stack"] == 0 and u["local"] == 0, (what, u)
        assert u["regs"] <= 64 and gpu_check.blocks_per_sm(u["regs"]) >= 4, (what, u)


@pytest.fixture(scope="module")
def family_sm90_resources() -> dict[str, dict]:
    """{mangled kernel: registers, stack, local} of family_kernels.cu on sm_90, from ptxas."""
    if _nvcc() is None:
        pytest.skip("no CUDA toolkit")
    return gpu_check.compile_resources("sm_90", source=gpu_check.FAMILY_CU)


def test_family_kernels_keep_4_blocks_per_sm_without_spills(family_sm90_resources):
    """GELU's limit (test_cuda.py): at most 64 registers and no spill in any kernel, so that at
    least 4 blocks of 256 threads stay resident on an sm_90 SM."""
    usage = family_sm90_resources
    found = {gpu_check.family_kernel(n) for n in usage} - {None}
    assert found == _expected_kernels()
    assert {gpu_check.packed_family_kernel(n) for n in usage} - {None} == _expected_packed()
    assert len(usage) == len(found) + len(_expected_packed())
    for name, u in usage.items():
        what = gpu_check.describe(name)
        assert what is not None and "(degree" in what, name
        assert u["stack"] == 0 and u["local"] == 0, (what, u)
        assert u["regs"] <= 64 and gpu_check.blocks_per_sm(u["regs"]) >= 4, (what, u)


# ================================================================== run (GPU)


def _forward(op: str, args: tuple, tier: str = "accurate") -> torch.Tensor:
    return getattr(OPS, op)(*args, tier=tier)


def _backward(
    op: str, grad: torch.Tensor, args: tuple, bw: str, tier: str = "accurate"
) -> tuple[torch.Tensor, ...]:
    r = getattr(OPS, f"{op}_backward")(grad, *args, bw, tier)
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _args(op: str, x: torch.Tensor, b: torch.Tensor, cap: float) -> tuple:
    """The forward's arguments after the op's kind: (x), (x, cap) or (a, b)."""
    return {"Plain": (x,), "Scaled": (x, cap), "Gated": (x, b)}[KIND[op]]


def _caps(op: str) -> tuple[float, ...]:
    return CAPS if KIND[op] == "Scaled" else (1.0,)


def _empty_at(like: torch.Tensor, phase: int) -> torch.Tensor:
    """A flat tensor of like's size on DEVICE, `phase` elements into its allocation."""
    n = like.numel()
    return torch.full((n + 8,), 7.0, dtype=like.dtype, device=DEVICE)[phase : phase + n]


def _check_op(op, x, b, grad, cap, msg, out_phases=(0, 0), backwards=BACKWARDS):
    """Every form of op on DEVICE against the CPU kernels, given the CPU tensors x, b, grad
    (moved keeping their layout): the functional forward and backward, out= (at out_phases
    for flat inputs), and the in-place form."""
    xc, bc, gc = (_to_cuda(t) for t in (x, b, grad))
    args, args_c = _args(op, x, b, cap), _args(op, xc, bc, cap)
    y = _forward(op, args)
    _same_as_cpu(_forward(op, args_c), y, f"{op} {msg}")
    flat = x.dim() == 1 and x.is_contiguous()
    out = _empty_at(xc, out_phases[0]) if flat else torch.empty_like(xc)
    getattr(OPS, op).out(*args_c, out=out)
    assert_same_bits(out.cpu(), y, f"{op}.out {msg}")
    if KIND[op] != "Gated" and 0 not in x.stride():
        z = xc.clone()
        getattr(OPS, f"{op}_")(z, *args_c[1:])
        assert_same_bits(z.cpu(), y, f"{op}_ {msg}")
    for bw in backwards:
        want = _backward(op, grad, args, bw)
        got = _backward(op, gc, args_c, bw)
        for k, (g_, w_) in enumerate(zip(got, want, strict=True)):
            _same_as_cpu(g_, w_, f"{op}_backward {bw} [{k}] {msg}")
    bw = backwards[-1]
    want = _backward(op, grad, args, bw)
    outs = [_empty_at(xc, p) if flat else torch.empty_like(xc) for p in out_phases[: len(want)]]
    if len(want) == 2:
        OPS.swiglu_backward.out(gc, *args_c, bw, grad_a=outs[0], grad_b=outs[1])
    else:
        getattr(OPS, f"{op}_backward").out(gc, *args_c, bw, out=outs[0])
    for k, (o, w_) in enumerate(zip(outs, want, strict=True)):
        assert_same_bits(o.cpu(), w_, f"{op}_backward.out [{k}] {msg}")


@needs_gpu
@pytest.mark.parametrize("layout", list(_layouts(torch.float32)))
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
@pytest.mark.parametrize("op", OP_NAMES)
def test_family_every_op_gives_the_cpu_bits(op, dtype, layout):
    """Each layout (views, transposes, channels_last, expanded, offsets) of each dtype."""
    x = _layouts(dtype)[layout]
    b = _mixed(x.numel(), dtype, seed=21).reshape(x.shape)
    grad = _mixed(x.numel(), dtype, seed=22).reshape(x.shape)
    for cap in _caps(op):
        _check_op(op, x, b, grad, cap, f"{layout} {_name(dtype)} cap={cap}")


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_family_tails_and_every_16_byte_offset(dtype):
    """Every tail length of the 16-byte loops and every offset of each operand in its 16-byte
    line (x, grad, b and each output at different ones; the gated backward's outputs at the
    same offset and at two different ones), and a size that makes the grid stride."""
    top = (1 << 16) + 64
    base, bbase, gbase = (_mixed(top, dtype, seed=s) for s in (31, 32, 33))
    for n in [*range(1, 26), 255, 4097, 65_537]:  # (heads < 8 + tails < 16: up to 24)
        for off in range(8):
            x = base[off : off + n]
            b = bbase[(off + 5) % 8 :][:n]
            g = gbase[(off + 3) % 8 :][:n]
            phases = ((off + 1) % 8, (off + 1) % 8 if off % 2 else (off + 4) % 8)
            for op in OP_NAMES:
                _check_op(op, x, b, g, _caps(op)[-1], f"n={n} off={off}", phases, ("default",))


@needs_gpu
@pytest.mark.parametrize("op", OP_NAMES)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_name)
def test_family_exhaustive_16bit_matches_cpu(dtype, op):
    """All 65,536 inputs as x (as a for SwiGLU, with b random and b = 1): forward and every
    backward with a unit and a random gradient, in both tiers; the GPU's bits are the CPU's,
    whose accuracy the family's exhaustive CPU tests prove."""
    x = all_inputs(dtype)
    ones = torch.ones_like(x)
    grad = _mixed(x.numel(), dtype, seed=41)
    bs = (_mixed(x.numel(), dtype, seed=42), ones) if KIND[op] == "Gated" else (ones,)
    for tier, cap, b in itertools.product(TIERS, _caps(op), bs):
        args, args_c = _args(op, x, b, cap), _args(op, x.to(DEVICE), b.to(DEVICE), cap)
        msg = f"{tier} cap={cap}"
        _same_as_cpu(_forward(op, args_c, tier), _forward(op, args, tier), f"{op} {msg}")
        for bw in BACKWARDS:
            for g in (ones, grad):
                want = _backward(op, g, args, bw, tier)
                got = _backward(op, g.to(DEVICE), args_c, bw, tier)
                for k, (g_, w_) in enumerate(zip(got, want, strict=True)):
                    _same_as_cpu(g_, w_, f"{op}_backward {bw} [{k}] {msg}")


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_family_special_values(dtype):
    """NaN, +-inf, +-0 and values beyond every clamp, forward and backward (a NaN gradient
    stays NaN where the derivative is 0), as the CPU gives them."""
    nan, inf = math.nan, math.inf
    x = torch.tensor([nan, inf, -inf, 0.0, -0.0, 100.0, -100.0, 1e-30, -1e-30], dtype=dtype)
    for op in OP_NAMES:
        for cap in _caps(op):
            _check_op(op, x, x.flip(0), torch.full_like(x, nan), cap, f"nan grad cap={cap}")
            _check_op(op, x, torch.ones_like(x), torch.ones_like(x), cap, f"cap={cap}")


@needs_gpu
def test_family_autograd_on_cuda_uses_the_cuda_backward():
    x = (torch.randn(4, 37, device=DEVICE) * 3).requires_grad_()
    b = torch.randn(4, 37, device=DEVICE).requires_grad_()
    g = torch.randn(4, 37, device=DEVICE)
    xd, bd, gd = x.detach().cpu(), b.detach().cpu(), g.cpu()
    for op in OP_NAMES:
        x.grad = b.grad = None
        cap = _caps(op)[-1]
        args = _args(op, x, b, cap)
        # "direct": the CUDA backward op (autograd's default for sigmoid and tanh is the
        # backward from the saved result, PyTorch's ops on CUDA; test_from_output.py).
        getattr(turbogelu, op)(*args, backward="direct").backward(g)
        want = _backward(op, gd, _args(op, xd, bd, cap), "direct")
        assert x.grad.device.type == DEVICE
        assert_same_bits(x.grad.cpu(), want[0], op)
        if KIND[op] == "Gated":
            assert_same_bits(b.grad.cpu(), want[1], op)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, *HALF_DTYPES], ids=str)
def test_family_default_backward_on_cuda_is_the_cpus(dtype):
    """Autograd's default backward of the from-output ops on CUDA (the formula by PyTorch's
    CUDA ops, 16-bit computed in float32) against the CPU's from-output kernels on the same
    saved result: within an ulp (op_references.assert_within_an_ulp)."""
    k = torch.arange(50_000, dtype=torch.float64)
    x = (((k * 7919) % 19999 - 9999) / 1111.0).to(dtype)
    g = (((k * 104729) % 997 - 498) / 256.0).to(dtype)
    for op in family.FROM_OUTPUT_FUNCTIONS:
        cap = _caps(op)[-1]
        args = (cap,) if KIND[op] == "Scaled" else ()
        xc = (x.clamp(max=10) if op == "exp2" else x).to(DEVICE).requires_grad_()
        y = getattr(turbogelu, op)(xc, *args)
        (dx,) = torch.autograd.grad(y, xc, g.to(DEVICE))
        want = getattr(torch.ops.turbogelu, f"{op}_backward_from_output")(
            g, y.detach().cpu(), *args
        )
        assert_within_an_ulp(dx.cpu(), want, f"{op} {dtype}")


@needs_gpu
@pytest.mark.parametrize("op", OP_NAMES)
def test_family_opcheck_cuda(op):
    x = (torch.randn(5, 41, dtype=torch.float64) * 3).to(DEVICE)
    b = torch.randn(5, 41, dtype=torch.float64).to(DEVICE)
    g = torch.randn(5, 41, dtype=torch.float64).to(DEVICE)
    args = _args(op, x, b, _caps(op)[-1])
    fwd = getattr(OPS, op)
    bwd = getattr(OPS, f"{op}_backward")
    xr = x.clone().requires_grad_()
    torch.library.opcheck(fwd.default, (xr, *args[1:]), {"backward": "matched"})
    torch.library.opcheck(fwd.out, args, {"out": torch.empty_like(x)})
    torch.library.opcheck(bwd.default, (g, *args, "direct"), {})
    if KIND[op] == "Gated":
        outs = {"grad_a": torch.empty_like(x), "grad_b": torch.empty_like(x)}
        torch.library.opcheck(bwd.out, (g, *args, "matched"), outs)
    else:
        torch.library.opcheck(getattr(OPS, f"{op}_").default, (x.clone(), *args[1:]), {})
        torch.library.opcheck(bwd.out, (g, *args, "matched"), {"out": torch.empty_like(x)})


@needs_gpu
@cuda_only
def test_family_errors_and_devices():
    x = torch.randn(6, 4, device=DEVICE)
    with pytest.raises(RuntimeError, match="CUDA kernel"):
        OPS.sigmoid.out(x, out=torch.empty(6, 4))  # out on the CPU
    with pytest.raises(RuntimeError, match="CUDA kernel"):
        OPS.swiglu(x, torch.randn(6, 4))
    with pytest.raises(RuntimeError, match="CUDA kernel"):
        OPS.swiglu_backward(torch.randn(6, 4), x, x)
    with pytest.raises(ValueError, match="cap must be positive"):
        OPS.softcap(x, -1.0)
    with pytest.raises(TypeError, match="supported dtypes are"):
        OPS.tanh(torch.ones(3, device=DEVICE, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.silu_(x.clone().requires_grad_())
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = OPS.silu(x)
    s.synchronize()
    assert_same_bits(y.cpu(), OPS.silu(x.cpu()))


@needs_gpu
@cuda_only
def test_family_grid_is_one_wave_of_what_fits_on_an_sm():
    """As GELU's: with more work than one wave, the grid is SMs x the blocks of that kernel
    resident per SM, which on sm_90 is what its registers allow (cuobjdump, when found)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    usage = {}
    cuobjdump = gpu_check.find_cuobjdump()
    if cuobjdump and (props.major, props.minor) == (9, 0):
        found = gpu_check.extension_resources(gpu_check.extension_path(), cuobjdump)
        usage = {gpu_check.describe(n): u for n, u in found.items() if u["arch"] == "sm_90"}
    probe = BENCH_OPS._cuda_last_launch
    for dtype in DTYPES:
        x = torch.randn(1 << 24, device=DEVICE).to(dtype)
        for op in OP_NAMES:
            args = _args(op, x, x, _caps(op)[-1])
            for direction in ("forward", "backward"):
                if direction == "forward":
                    _forward(op, args)
                else:
                    _backward(op, x, args, "default")
                blocks, per_sm, sms = probe()
                what = (_name(dtype), op, direction)
                assert sms == props.multi_processor_count, what
                assert 1 <= per_sm <= 2048 // 256, (what, per_sm)
                assert blocks == sms * per_sm, (what, blocks, sms, per_sm)
                # the kernel's name as gpu_check.describe gives it (the default tier's)
                name = f"{_name(dtype)} {op} (accurate) {direction}"
                u = next((u for d, u in usage.items() if d and d.startswith(name)), None)
                assert u is not None or not usage, f"no kernel named {name!r} in cuobjdump's list"
                if u is not None:
                    assert per_sm == gpu_check.blocks_per_sm(u["regs"]), (what, u)
        OPS.silu(x[:100])
        assert probe()[0] == 1


def _same_packed(actual: torch.Tensor, expected: torch.Tensor, msg: str):
    """The same bits, zeros' signs included; NaN where the other is NaN (any NaN: the lab's
    replay does not model the hardware's NaN payloads)."""
    nan = torch.isnan(expected)
    assert torch.equal(torch.isnan(actual), nan), msg
    assert torch.equal(actual[~nan].view(torch.int16), expected[~nan].view(torch.int16)), msg


@needs_gpu
@cuda_only
def test_exp2_has_no_packed_path():
    """exp2's paper tier runs the float32-arithmetic kernels with the switch on too: the CPU's
    bits on every bfloat16 input."""
    x = all_inputs(torch.bfloat16)
    with turbogelu.ops.use_cuda_packed():
        got = OPS.exp2(x.to(DEVICE), tier="paper")
    _same_as_cpu(got, OPS.exp2(x, tier="paper"), "exp2 paper, switch on")


@needs_gpu
@cuda_only
@pytest.mark.parametrize("op", [f[0] for f in PACKABLE])
def test_family_packed_bf16_is_the_lab_replay(op):
    """With turbogelu.ops.use_cuda_packed() the paper tier on bfloat16 gives, for every input
    (as x, as a for SwiGLU with b random; aligned, at an odd offset, with a tail), the bits of
    the lab's replay of packed bfloat16 arithmetic (turbogelu/approx/packed_family.py, whose
    errors tests/test_packed_family.py bounds): forward, out=, in place, every backward with a
    unit and a random gradient. Meanwhile the accurate tier and float16 keep the CPU kernels'
    bits, and the paper tier its own again once the switch is off."""
    for lab_dependency in ("numpy", "scipy", "mpmath"):  # the lab's replay needs them
        pytest.importorskip(lab_dependency)
    from turbogelu.approx import packed_family

    x = all_inputs(torch.bfloat16)
    b = _mixed(x.numel(), torch.bfloat16, seed=51)
    grad = _mixed(x.numel(), torch.bfloat16, seed=52)
    ones = torch.ones_like(x)
    cap = _caps(op)[-1]
    gated = KIND[op] == "Gated"
    lab_in = (x.double().numpy(), b.double().numpy()) if gated else (x.double().numpy(),)

    def lab(values) -> torch.Tensor:
        return torch.from_numpy(values).to(torch.bfloat16)  # (exact: bfloat16 values)

    want = lab(packed_family.forward(op, *lab_in, cap=cap))
    xc, bc = x.to(DEVICE), b.to(DEVICE)
    args_c = _args(op, xc, bc, cap)
    with turbogelu.ops.use_cuda_packed():
        _same_packed(_forward(op, args_c, "paper").cpu(), want, f"{op} forward")
        for s in (slice(3, None), slice(None, 4101)):
            got = _forward(op, _args(op, xc[s], bc[s], cap), "paper").cpu()
            _same_packed(got, want[s], f"{op} forward [{s}]")
        out = torch.empty_like(xc)
        getattr(OPS, op).out(*args_c, tier="paper", out=out)
        _same_packed(out.cpu(), want, f"{op}.out")
        if not gated:
            z = xc.clone()
            getattr(OPS, f"{op}_")(z, *args_c[1:], tier="paper")
            _same_packed(z.cpu(), want, f"{op}_")
        for bw in BACKWARDS:
            for g in (ones, grad):
                lab_g = packed_family.backward(
                    op, g.double().numpy(), *lab_in, cap=cap, backward=bw
                )
                lab_g = lab_g if isinstance(lab_g, tuple) else (lab_g,)
                got = _backward(op, g.to(DEVICE), args_c, bw, "paper")
                for k, (g_, w_) in enumerate(zip(got, lab_g, strict=True)):
                    _same_packed(g_.cpu(), lab(w_), f"{op}_backward {bw} [{k}]")
        # not packed: the accurate tier, and float16 in the paper tier
        args = _args(op, x, b, cap)
        _same_as_cpu(_forward(op, args_c), _forward(op, args), f"{op} accurate, switch on")
        h, hb = all_inputs(torch.float16), _mixed(x.numel(), torch.float16, seed=53)
        args_h = _args(op, h, hb, cap)
        args_hc = _args(op, h.to(DEVICE), hb.to(DEVICE), cap)
        _same_as_cpu(_forward(op, args_hc, "paper"), _forward(op, args_h, "paper"), "float16")
        for bw in BACKWARDS:
            want_a = _backward(op, grad, args, bw)
            got_a = _backward(op, grad.to(DEVICE), args_c, bw)
            for k, (g_, w_) in enumerate(zip(got_a, want_a, strict=True)):
                _same_as_cpu(g_, w_, f"{op}_backward {bw} [{k}] accurate, switch on")
    _same_as_cpu(_forward(op, args_c, "paper"), _forward(op, args, "paper"), f"{op} off again")
    with turbogelu.ops.use_cuda_packed():  # the packed kernels' grid: one wave, as the others
        big = torch.randn(1 << 24, device=DEVICE).to(torch.bfloat16)
        _forward(op, _args(op, big, big, cap), "paper")
        blocks, per_sm, sms = BENCH_OPS._cuda_last_launch()
        assert 1 <= per_sm <= 2048 // 256 and blocks == sms * per_sm, (op, blocks, per_sm)
