"""The ops under torch.compile (turbogelu/_inductor.py): their programs lowered into Inductor's
generated code, fused with their neighbours.

- The private APIs it relies on, pinned for torch 2.14.1: the lowerings are registered when
  Inductor loads (whichever is imported first), and a torch without them gets a warning and
  the opaque ops.
- A compiled chain is one generated C++ kernel, with true fused multiply-adds and no call of
  the op.
- Bits: every op, tier and part (forward, both backwards, the from-output formulas) compiled
  gives the bits of the eager polynomial kernels on every bfloat16 and float16 input and on
  the float32 grid of the accuracy report (linspace(-6, 6, 1_000_001)) with the op tests'
  wide sample, and in float64 on that grid. On an AVX-512 CPU eager runs the cells program
  by default, the compiled code the polynomial: other bits within the same bounds, which the
  polynomial's own tests prove.
- Autograd through a compiled chain; export keeps the named ops (test_autograd_modes.py).
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import HALF_DTYPES, ROOT, assert_same_bits
from op_rows import exp2_float32_sample, float32_sample
from torch._inductor.utils import fresh_cache, run_and_get_code

import turbogelu
from turbogelu import _inductor, _table
from turbogelu import ops as tops

OPS = torch.ops.turbogelu
CAP = 3.0
PARTS = ("direct", "matched")


def _calls():
    """(label, function of (x, xe, g, b)) for every op, tier and part: x the input (xe exp2's),
    g a gradient, b swiglu's second input."""
    calls = []
    for ap in ("none", "tanh"):
        for tier in _table.TIERS:
            calls.append((f"gelu {ap} {tier}", lambda x, xe, g, b, ap=ap, t=tier: OPS.gelu(
                x, ap, tier=t)))  # fmt: skip
            for part in PARTS:
                calls.append((f"gelu {ap} {tier} {part}", lambda x, xe, g, b, a=ap, p=part,
                              t=tier: OPS.gelu_backward(g, x, a, p, t)))  # fmt: skip
    for row in _table.OPS:
        n = row.name
        for tier in row.tiers:
            if row.kind == "Gated":
                calls.append((f"{n} {tier}", lambda x, xe, g, b, t=tier: OPS.swiglu(x, b, tier=t)))
                for part in PARTS:
                    for i in (0, 1):
                        calls.append((f"{n} {tier} {part} {i}", lambda x, xe, g, b, t=tier, p=part,
                                      i=i: OPS.swiglu_backward(g, x, b, p, t)[i]))  # fmt: skip
                continue
            scaled = (CAP,) if row.kind == "Scaled" else ()
            fwd, bwd = getattr(OPS, n), getattr(OPS, f"{n}_backward")

            def arg(x, xe, n=n):
                return xe if n == "exp2" else x

            calls.append((f"{n} {tier}", lambda x, xe, g, b, f=fwd, t=tier, s=scaled, a=arg: f(
                a(x, xe), *s, tier=t)))  # fmt: skip
            for part in PARTS:
                calls.append((f"{n} {tier} {part}", lambda x, xe, g, b, f=bwd, t=tier, p=part,
                              s=scaled, a=arg: f(g, a(x, xe), *s, p, t)))  # fmt: skip
            if row.from_output:
                fo = getattr(OPS, f"{n}_backward_from_output")
                # on y = the input itself (every value, the floor's |q| > 1 too): a y computed
                # in the same graph stays float32 there, where eager rounds it first
                calls.append((f"{n} {tier} from output", lambda x, xe, g, b, fo=fo, s=scaled,
                              a=arg: fo(g, a(x, xe), *s)))  # fmt: skip
    return calls


CALLS = _calls()


def _all(x, xe, g, b):
    return tuple(fn(x, xe, g, b) for _, fn in CALLS)


def _inputs(dtype: torch.dtype):
    if dtype in HALF_DTYPES:  # every 16-bit value
        x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
        xe = x
    else:
        grid = np.linspace(-6, 6, 1_000_001).astype(np.float32)
        x = torch.from_numpy(np.concatenate([grid, float32_sample()])).to(dtype)
        xe = torch.from_numpy(np.concatenate([grid, exp2_float32_sample()]))[: x.numel()]
        xe = torch.cat([xe, torch.zeros(x.numel() - xe.numel())]).to(dtype)
    gen = torch.Generator().manual_seed(7)
    g = (torch.randn(x.numel(), generator=gen) * 2).to(dtype)
    b = (torch.randn(x.numel(), generator=gen) * 2).to(dtype)
    return x, xe, g, b


# float64 (the same program in double, also bit for bit) compiles a fourth program: ~15 s, slow
@pytest.mark.parametrize(
    "dtype",
    [torch.bfloat16, torch.float16, torch.float32,
     pytest.param(torch.float64, marks=pytest.mark.slow)],
    ids=str,
)  # fmt: skip
def test_compiled_ops_give_the_polynomial_kernels_bits(dtype):
    """One compiled program of every call (Inductor lowers each op; none stays a call, but
    for exp2's forward of 16-bit data: _inductor._bit_casts_scalar) against the eager
    polynomial kernels, bit for bit."""
    import torch._inductor.lowering as lowering

    # every op object the calls reach is the one registered (a test that recreates a packet,
    # e.g. by calling torch.ops.turbogelu.__getattr__ itself, leaves new objects unlowered)
    unregistered = [str(op) for op in _inductor.lowerings() if op not in lowering.user_lowerings]
    assert not unregistered, unregistered
    torch._dynamo.reset()
    inputs = _inputs(dtype)
    # a fresh cache: a warm one would return code compiled by an earlier run, and hide a
    # lowering that no longer happens
    with fresh_cache():
        got, code = run_and_get_code(torch.compile(_all, fullgraph=True), *inputs)
    called = set(re.findall(r"= torch\.ops\.turbogelu\.(\w+)\.default\(", "".join(code)))
    assert called == ({"exp2"} if dtype in HALF_DTYPES else set()), "ops stayed calls"
    with tops.use_cpu_kernel("poly"):
        want = _all(*inputs)
    for (label, _), a, w in zip(CALLS, got, want, strict=True):
        assert_same_bits(a, w, f"{label} {dtype}")


def _chain(x, b):
    return turbogelu.gelu(x + b) * 2.0


def test_a_compiled_chain_is_one_fused_kernel():
    """gelu(x + b) * 2 compiles to one C++ kernel (Inductor's name lists the fused ops) with
    fused multiply-adds (vectorised: at::vec's fmadd) and no call of the op; its value is the
    eager chain's."""
    torch._dynamo.reset()
    x = torch.linspace(-8, 8, 4099)
    b = torch.linspace(1, -1, 4099)
    got, code = run_and_get_code(torch.compile(_chain, fullgraph=True), x, b)
    source = "".join(code)
    kernels = [line for line in source.splitlines() if "async_compile.cpp_pybinding" in line]
    assert len(kernels) == 1 and "cpp_fused_add_gelu_mul" in kernels[0], kernels
    assert "fmadd(" in source and "torch.ops.turbogelu" not in source
    with tops.use_cpu_kernel("poly"):
        assert_same_bits(got, _chain(x, b))


def test_compiled_exp2_has_no_clamp_or_conversion_on_its_chain():
    """exp2's float32 code (the speed of its compiled row rests on this, see
    _inductor.Inductor.select_window and _power): no NaN-propagating maximum/minimum or
    where() ahead of the program (the window is selected after it), no float-to-integer
    conversion (2^m from the bits of m + magic + bias), and the bit casts of one vector, which
    the C++ compiler folds away. Its values are the eager kernel's bits (the bits test)."""
    torch._dynamo.reset()
    x = torch.linspace(-200, 200, 4099)
    with fresh_cache():
        got, code = run_and_get_code(torch.compile(turbogelu.exp2, fullgraph=True), x)
    kernel = "".join(code).split('extern "C"')[1].split("async_compile.wait")[0]
    head = kernel.split("fmadd(")[0]
    assert "loadu(" in head and "maximum(" not in head and "blendv" not in head, head
    assert "convert<int32_t" not in kernel and "torch.ops.turbogelu" not in "".join(code)
    assert "blendv" in kernel.split("fmadd(")[-1]  # the window's ends, after the program
    assert_same_bits(got, turbogelu.exp2(x))


def test_autograd_through_a_compiled_chain():
    """Forward and backward of a compiled block: both lowered (no op call in either graph's
    code), the gradients the eager polynomial kernels' bits."""
    torch._dynamo.reset()

    def block(x, b):
        return turbogelu.swiglu(turbogelu.silu(x + b), x, backward="direct").sum()

    x = torch.linspace(-7, 7, 1031, requires_grad=True)
    b = torch.linspace(2, -2, 1031, requires_grad=True)
    compiled = torch.compile(block, fullgraph=True)
    _, code = run_and_get_code(lambda: torch.autograd.grad(compiled(x, b), (x, b)))
    got = torch.autograd.grad(compiled(x, b), (x, b))
    assert "torch.ops.turbogelu" not in "".join(code)
    with tops.use_cpu_kernel("poly"):
        want = torch.autograd.grad(block(x, b), (x, b))
    for a, w in zip(got, want, strict=True):
        assert_same_bits(a, w)


def test_chains_in_16_bit_hold_the_bound():
    """In a bfloat16 chain Inductor keeps x + b in float32 (eager rounds it to bfloat16
    first), so the compiled chain may differ from the eager one by that rounding (at most an
    ulp of x + b, eps |x + b|) carried through GELU (slope <= 1.13), and by the result's own
    rounding (an ulp of it; the chain's * 2 is exact)."""
    torch._dynamo.reset()
    x = torch.linspace(-8, 8, 8192).bfloat16()
    b = torch.linspace(0.3, -0.7, 8192).bfloat16()
    got = torch.compile(_chain, fullgraph=True)(x, b).double()
    with tops.use_cpu_kernel("poly"):
        want = _chain(x, b).double()
    eps = torch.finfo(torch.bfloat16).eps
    bound = 2 * 1.13 * eps * (x.double() + b.double()).abs() + eps * want.abs()
    assert ((got - want).abs() <= bound).all()
    assert (got != want).any()  # the roundings do differ somewhere


def _softmax_cases():
    """(x, dim): rows of at least and under the kernel's 128 (its two loops), a strided dim,
    and the special rows: a NaN, all -inf, a +inf, all equal."""
    gen = torch.Generator().manual_seed(11)
    cases = [(torch.randn(48, 1000, generator=gen) * 8, -1), (torch.randn(300, 7, generator=gen)
             * 8, 0), (torch.randn(6, 40, 33, generator=gen) * 30, 1)]  # fmt: skip
    special = torch.randn(5, 9, generator=gen)
    special[0, 3] = float("nan")
    special[1] = -float("inf")
    special[2, 4] = float("inf")
    special[3] = 2.5
    return cases + [(special, -1)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_compiled_softmax_is_within_the_sum_order_bound(dtype):
    """softmax lowers around the exp2 program with Inductor's reductions: e = exp2(fl(fl(x -
    m) log2 e)) is the kernel's, bit for bit, but Inductor sums e in its own order. Both sums
    of n positive terms lie within (n - 1) u of the exact one (u = 2^-24), fl(1/s) and the
    product round once each: float32 results within (2 (n - 1) + 4) u relative of the eager
    kernel's. For n <= 1000 that is under half a 16-bit ulp, so 16-bit results are within one
    ulp (one rounding each of float32 values that close). NaNs where eager has them.
    16-bit softmax stays the op's call on the CPU (_inductor._bit_casts_scalar), so its bound
    is met trivially; it is kept for the day the lowering covers it."""
    torch._dynamo.reset()
    for x, dim in _softmax_cases():
        x = x.to(dtype)
        got, code = run_and_get_code(torch.compile(lambda s, d=dim: turbogelu.softmax(s, d),
                                                   fullgraph=True), x)  # fmt: skip
        called = "torch.ops.turbogelu.softmax" in "".join(code)
        assert called == (dtype != torch.float32), dtype
        with tops.use_cpu_kernel("poly"):
            want = turbogelu.softmax(x, dim)
        assert torch.equal(got.isnan(), want.isnan()), dim
        ok = ~want.isnan()
        g, w = got[ok], want[ok]
        if dtype == torch.float32:
            n = x.shape[dim]
            bound = (2 * (n - 1) + 4) * 2.0**-24
            assert ((g.double() - w.double()).abs() <= bound * w.double()).all(), dim
        else:  # all positive: the bit patterns order as the values
            ulps = (g.view(torch.int16).int() - w.view(torch.int16).int()).abs()
            assert int(ulps.max()) <= 1, dim


def test_attention_scores_fuse_softcap_and_softmax():
    """softmax(softcap(s)) along the keys compiles to one C++ kernel with no op call (the
    reductions and the two programs in one pass over the scores)."""
    torch._dynamo.reset()
    s = torch.randn(4, 128, 128) * 40
    got, code = run_and_get_code(torch.compile(lambda s: turbogelu.softmax(
        turbogelu.softcap(s, 30.0), -1), fullgraph=True), s)  # fmt: skip
    source = "".join(code)
    kernels = [line for line in source.splitlines() if "async_compile.cpp_pybinding" in line]
    assert len(kernels) == 1 and "torch.ops.turbogelu" not in source, kernels
    with tops.use_cpu_kernel("poly"):
        want = turbogelu.softmax(turbogelu.softcap(s, 30.0), -1)
    assert ((got - want).abs() <= (2 * 127 + 4) * 2.0**-24 * want).all()


INPLACE = {
    "gelu_": lambda x: turbogelu.gelu_(x, "tanh"),
    "sigmoid_": turbogelu.sigmoid_,
    "tanh_": turbogelu.tanh_,
    "silu_": turbogelu.silu_,
    "exp2_": turbogelu.exp2_,
    "softplus_": turbogelu.softplus_,
    "softcap_": lambda x: turbogelu.softcap_(x, CAP),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_in_place_functions_lower_under_compile(name):
    """Under torch.compile the in-place functions are x.copy_(op(x)) (ops.py), lowered with no
    op call: x holds the eager polynomial kernels' bits, the result is x; a tensor that
    requires grad is refused as in eager."""
    torch._dynamo.reset()
    f = INPLACE[name]
    x = torch.linspace(-8, 8, 4099)
    y = x.clone()
    out, code = run_and_get_code(torch.compile(lambda v: f(v) * 1.0, fullgraph=True), y)
    assert "torch.ops.turbogelu" not in "".join(code)
    if name == "exp2_":  # 16-bit exp2 stays a call on the CPU (_inductor._bit_casts_scalar)
        h = x.bfloat16()
        _, code = run_and_get_code(torch.compile(lambda v: f(v) * 1.0, fullgraph=True), h)
        assert "torch.ops.turbogelu.exp2" in "".join(code)
        assert_same_bits(h, turbogelu.exp2(x.bfloat16()), name)
    with tops.use_cpu_kernel("poly"):
        want = f(x.clone())
    assert_same_bits(y, want, name)
    assert_same_bits(out, want, name)
    with pytest.raises(RuntimeError, match=f"turbogelu.{name}: the in-place"):
        torch.compile(f)(torch.ones(3, requires_grad=True))


# ------------------------------------------------------------------ the private APIs


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_lowerings_are_registered_whichever_loads_first():
    """Importing turbogelu does not import Inductor (seconds): the import hook registers the
    lowerings when Inductor loads (a fresh process), and install() registers them at once
    where it already has (this one)."""
    code = "; ".join(
        [
            "import sys, torch, turbogelu.ops",
            "print('torch._inductor' in sys.modules)",
            "import torch._inductor.lowering as L",
            "print(len([k for k in L.user_lowerings if 'turbogelu' in str(k)]))",
        ]
    )
    assert _run(code).split() == ["False", str(len(_inductor.lowerings()))]
    import torch._inductor.lowering as lowering

    lowering.user_lowerings.pop(OPS.gelu.default)
    _inductor.install()
    assert OPS.gelu.default in lowering.user_lowerings


def test_a_torch_without_the_apis_keeps_the_opaque_ops():
    """No user_lowerings, or an fma that is a multiply and an add: a warning, no lowering, and a
    cache tag of its own (a graph compiled with the opaque ops never comes back from the cache
    to a process that lowers them, nor the other way). Nothing is compiled here: that would
    put such a graph in the shared cache."""
    import torch._inductor.lowering as lowering
    import torch.compiler.config as compiler_config

    class OldLowering:  # no user_lowerings
        pass

    class Unfused:
        class fma:  # noqa: N801 (an OverridesData's shape)
            cpp = staticmethod(lambda a, b, c: f"{a} * {b} + {c}")
            cppvec = cpp
            triton = cpp

        pointwise_overrides_data = {"fma": fma}

    before = compiler_config.cache_key_tag
    try:
        with pytest.warns(RuntimeWarning, match="the ops stay opaque calls"):
            assert _inductor.register(OldLowering()) is False
        with pytest.warns(RuntimeWarning, match="does not write a fused multiply-add for cpu"):
            assert _inductor.register(lowering, common=Unfused) is False
        assert not _inductor.lowered_on("cpu")
        assert "turbogelu-lowered-cpu0-cuda0" in compiler_config.cache_key_tag.split("|")
    finally:
        assert _inductor.register(lowering)
        compiler_config.cache_key_tag = before
    assert _inductor.lowered_on("cpu") and _inductor.lowered_on("cuda")
    assert "turbogelu-lowered-cpu1-cuda1" in compiler_config.cache_key_tag.split("|")


def test_the_code_generators_fma_is_fused():
    """ops.fma is a fused multiply-add in the C++ scalar and vector code and in Triton's (the
    lowerings' premise: Inductor compiles its C++ with -ffp-contract=off, so a multiply and an
    add would round twice): the generators' spellings and the table register() reads."""
    from torch._inductor.codegen import common, cpp, triton

    assert cpp.CppOverrides.fma("a", "b", "c") == "std::fma(a, b, c)"
    assert cpp.CppVecOverrides.fma("a", "b", "c") == "fmadd(a, b, c)"
    assert triton.TritonOverrides.fma("a", "b", "c") == "tl.fma(a, b, c)"
    assert _inductor.fused_fma(common) == {"cpu": True, "cuda": True}


def test_export_and_eager_keep_the_ops():
    """torch.export keeps the named op; eager calls the hand-written kernel (on an AVX-512 CPU
    the cells program, whose bits differ from the compiled polynomial's)."""
    ep = torch.export.export(torch.nn.Sequential(turbogelu.GELU()), (torch.randn(8),))
    assert "torch.ops.turbogelu.gelu.default" in ep.graph_module.code
