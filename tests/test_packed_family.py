"""The activation family's packed bfloat16 path, in the lab (turbogelu/approx/packed_family.py):
the replay of the opt-in CUDA kernels (kernels/cuda/bf16x2.cuh, family_kernels.cu) that run
the paper tier's programs in ``__nv_bfloat162`` arithmetic.

* the sequence is family_eval.h's: the same replay in float32 arithmetic with the float32
  constants is the float32 tier's replay (and so the CPU kernels' bits), every bfloat16 input;
* the constants are the kernels' float32 values rounded to bfloat16;
* the measured bounds: over every finite bfloat16 input the packed path's max |error| is
  within ``packed_family.BOUNDS`` (what ``python -m turbogelu.approx.packed_family`` measured),
  for each program and softcap at two caps; swiglu's and the backward's products add one
  bfloat16 rounding each (checked against the bound they imply);
* IEEE values as the functions have them; the switch leaves every CPU op alone.

That the GPU computes exactly these bits is tests/test_cuda.py's (on a GPU).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import turbogelu
from turbogelu.approx import family_programs, packed_family, rounding
from turbogelu.approx.polyspec import PolySpec, replay
from turbogelu.approx.replay import Arith

PARTS = packed_family.PARTS
FUNCTIONS = packed_family.FUNCTIONS  # those with a paper tier: what the packed path runs
BF = "bfloat16"


def _all_bf16() -> np.ndarray:
    """Every bfloat16 bit pattern (NaNs and infinities included), as float64."""
    bits = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    with np.errstate(invalid="ignore"):  # (signalling NaNs, quieted by the cast)
        return bits.astype(np.float64)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values with equal signs of zero, NaN where the other is NaN."""
    nan = np.isnan(a)
    return bool(
        np.array_equal(nan, np.isnan(b))
        and np.array_equal(a[~nan], b[~nan])
        and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan]))
    )


@pytest.mark.parametrize("tier", ["paper", "accurate"])
@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_sequence_is_family_evals(function, tier):
    """With float32 constants in float32 arithmetic the replay is the float32 tier's replay bit
    for bit (every bfloat16 input, each program): the order of operations is the kernels'."""
    doc = family_programs.load(function, tier=tier)
    x = _all_bf16()
    for part in PARTS:
        ps = PolySpec.from_dict(doc[part])
        k = packed_family.kernel_program(ps, "float32")
        got = packed_family.family_eval(k, x, Arith("float32"))
        with np.errstate(invalid="ignore"):
            want = replay(ps, x.astype(np.float32)).astype(np.float64)
        assert _same(got, want), (function, tier, part)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_constants_are_the_kernels_rounded_to_bfloat16(function):
    doc = family_programs.load(function, tier="paper")
    for part in PARTS:
        ps = PolySpec.from_dict(doc[part])
        k = packed_family.kernel_program(ps)
        f32 = packed_family.kernel_program(ps, "float32")
        ours = (k.clamp, k.scale, *k.coefficients)
        theirs = (f32.clamp, f32.scale, *f32.coefficients)
        for a, b in zip(ours, theirs, strict=True):
            assert a == rounding.round_to(b, BF)
    # tanh's clamp 2.78 rounds up to 2.78125: the window reaches half a bfloat16 ulp further
    tanh = PolySpec.from_dict(family_programs.load("tanh", tier="paper")["forward"])
    assert packed_family.kernel_program(tanh).clamp == 2.78125 > tanh.clamp


def test_the_ops_compose_the_programs():
    """softcap at cap 1 is tanh, swiglu with b = 1 is silu, a unit gradient gives f' itself;
    softcap's constants are bfloat16 values of the float32 pair."""
    x = packed_family.finite_inputs()
    one = np.ones_like(x)
    tanh = packed_family.forward("tanh", x)
    assert _same(packed_family.forward("softcap", x, cap=1.0), tanh)
    assert _same(packed_family.forward("swiglu", x, one), packed_family.forward("silu", x))
    for bw in ("direct", "matched"):
        for op in ("sigmoid", "tanh", "silu"):
            doc = family_programs.load(op, tier="paper")
            d = packed_family.kernel_program(PolySpec.from_dict(doc[f"backward_{bw}"]))
            want = packed_family.family_eval(d, x)
            assert _same(packed_family.backward(op, one, x, backward=bw), want), (op, bw)
        ga, gb = packed_family.backward("swiglu", one, x, one, backward=bw)
        assert _same(ga, packed_family.backward("silu", one, x, backward=bw))
        assert _same(gb, packed_family.forward("silu", x))
    c, inv = packed_family.cap_constants(30.0)
    assert c == 30.0 and inv == rounding.round_to(np.float32(1) / np.float32(30), BF)


def _bound_rows():
    return [(fn, part) for fn in FUNCTIONS for part in PARTS]


@pytest.mark.parametrize(("function", "part"), _bound_rows())
def test_packed_error_within_its_measured_bound(function, part):
    e = packed_family.program_errors(function, part)
    p, f = e["packed"], e["float32"]
    print(f"\n{function} {part}: packed max |err| {p['max_abs']:.4g} ({p['max_ulp']} ulp), "
          f"float32 tier {f['max_abs']:.4g} ({f['max_ulp']} ulp)")  # fmt: skip
    assert p["inputs"] == f["inputs"] > 65_000
    assert p["max_abs"] <= packed_family.BOUNDS[(function, part)]


@pytest.mark.parametrize("cap", packed_family.CAPS)
def test_softcap_error_within_its_measured_bound(cap):
    e = packed_family.softcap_errors(cap)
    assert e["packed"]["max_abs"] <= packed_family.BOUNDS[(f"softcap@{cap:g}", "forward")]


def test_swiglu_and_gradient_products_add_one_rounding():
    """fl(f(a) b) and fl(grad f'(x)): within |b| (or |grad|) times the program's bound plus
    half a bfloat16 ulp of the result, on every finite a with random bfloat16 b."""
    x = packed_family.finite_inputs()
    rng = np.random.default_rng(5)
    b = rounding.round_to(rng.standard_normal(x.size) * 4, BF)
    with np.errstate(over="ignore"):  # exp(-x) = inf: sigmoid 0, as it is
        sig = 1 / (1 + np.exp(-x))
    exact_silu = x * sig
    half_ulp = lambda r: rounding.ulp_of(r, BF) / 2  # noqa: E731
    got = packed_family.forward("swiglu", x, b)
    limit = np.abs(b) * packed_family.BOUNDS[("silu", "forward")] + half_ulp(got)
    assert np.all(np.abs(got - exact_silu * b) <= limit)
    exact_d = sig * (1 - sig)
    got = packed_family.backward("sigmoid", b, x, backward="direct")
    limit = np.abs(b) * packed_family.BOUNDS[("sigmoid", "backward_direct")] + half_ulp(got)
    assert np.all(np.abs(got - exact_d * b) <= limit)


def test_ieee_values():
    nan, inf = math.nan, math.inf
    x = np.array([nan, inf, -inf, 0.0, -0.0, 1e-40, -1e-40])
    s = packed_family.forward("sigmoid", x)
    t = packed_family.forward("tanh", x)
    u = packed_family.forward("silu", x)
    assert np.isnan(s[0]) and np.isnan(t[0]) and np.isnan(u[0])
    assert list(s[1:5]) == [1.0, 0.0, 0.5, 0.5]
    assert list(t[1:3]) == [1.0, -1.0] and _same(t[3:5], np.array([0.0, -0.0]))
    # (silu(+-0) is the paper program's P(-1), 0.0234 in bfloat16: no zero there)
    assert u[1] == inf and _same(u[2:3], np.array([-0.0]))
    # subnormals are kept, not flushed: tanh(x) = fl(x p(-1)), a subnormal of x's sign
    assert 0 < t[5] < 1e-38 and 0 > t[6] > -1e-38
    for op in ("sigmoid", "tanh", "silu"):
        g = packed_family.backward(op, np.full(x.size, nan), x)
        assert np.all(np.isnan(g)), op  # a NaN gradient stays NaN where f' is 0
    assert packed_family.forward("softcap", np.array([inf, -inf]), cap=30.0).tolist() == [30, -30]


def test_the_switch_leaves_the_cpu_alone():
    """use_cuda_packed() is GELU's switch; on the CPU every tier and dtype keeps its bits."""
    x = torch.from_numpy(packed_family.finite_inputs()).to(torch.bfloat16)
    b = torch.randn(x.shape, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    calls = [
        lambda t: turbogelu.sigmoid(x, tier=t),
        lambda t: turbogelu.tanh(x, tier=t),
        lambda t: turbogelu.silu(x, tier=t),
        lambda t: turbogelu.softcap(x, 30.0, tier=t),
        lambda t: turbogelu.swiglu(x, b, tier=t),
    ]
    before = [f(t) for f in calls for t in ("paper", "accurate")]
    with turbogelu.ops.use_cuda_packed():
        assert torch.ops.turbogelu._cuda_packed()
        after = [f(t) for f in calls for t in ("paper", "accurate")]
    assert not torch.ops.turbogelu._cuda_packed()
    for a, c in zip(before, after, strict=True):
        assert torch.equal(a.view(torch.int16), c.view(torch.int16))


def test_report_renders_every_row():
    rows = packed_family.report_rows()
    assert len(rows) == len(FUNCTIONS) * len(PARTS) + len(packed_family.CAPS)
    text = packed_family.render(rows)
    assert text.count("\n") == len(rows) + 1
    assert all(r["packed"]["max_abs"] <= r["bound"] for r in rows)
