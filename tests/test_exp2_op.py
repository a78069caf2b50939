"""The exp2 op (the activation family's generic layer, family_eval.h's exp2_eval): the
accurate tier's bounds through the op; exact integers and the paper tier's special values;
float64; layouts, out= and in place; errors; opcheck; autograd. Its bits against the lab's
replay (``exp2_programs.replay``) on every instruction set, float32 and every 16-bit input,
both tiers, are test_family_ops.py's, with the family's rows; every row's IEEE special values
test_ops_special_values.py's. The spec refit and the measured errors:
tests/test_exp2_programs.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import HALF_DTYPES, assert_same_bits, layout_cases
from op_rows import exp2_float32_sample
from torch.library import opcheck

import turbogelu
from turbogelu.approx import exp2_programs as ep

OPS = torch.ops.turbogelu
TIERS = ep.TIERS
STORAGE = [torch.float32, torch.float16, torch.bfloat16]
IDS = lambda d: str(d).removeprefix("torch.")  # noqa: E731
LN2 = math.log(2.0)


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    if dtype in HALF_DTYPES:  # every value, NaNs and infinities included
        return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    return torch.from_numpy(exp2_float32_sample())


def _want(result32: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """The kernels compute in float32 and round once to the storage dtype."""
    return torch.from_numpy(np.ascontiguousarray(result32)).to(dtype)


def test_default_backward_op_is_the_specs_choice():
    x = torch.from_numpy(exp2_float32_sample())
    g = torch.ones_like(x)
    for tier in TIERS:
        choice = ep.load(tier)["default_backward"]
        assert_same_bits(
            OPS.exp2_backward(g, x, "default", tier), OPS.exp2_backward(g, x, choice, tier)
        )


# ------------------------------------------------------------------ the bounds, through the op


def test_accurate_float32_within_2_ulp():
    """Against 2^x correctly rounded (mpmath near midpoints), overflow included: the op's
    result is inf exactly where the correctly rounded one is."""
    x = exp2_float32_sample()
    x = x[~np.isnan(x)]
    got = OPS.exp2(torch.from_numpy(x)).double().numpy()
    want = ep.correctly_rounded(x)
    ulps = ep._ulps(got, want, "float32")
    assert ulps.max() <= ep.ULP_BOUND
    assert np.array_equal(np.isinf(got), np.isinf(want))
    assert np.array_equal(got == 0, want == 0)
    # The spec's figures are the shipped program's (tests/test_exp2_programs.py remeasures).
    assert ep.load("accurate")["forward"]["errors"]["float32"]["max_ulp"] <= ep.ULP_BOUND


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=IDS)
def test_accurate_16_bit_within_1_ulp(dtype):
    x = _inputs(dtype)
    x = x[~torch.isnan(x)]
    fmt = IDS(dtype)
    got = OPS.exp2(x).double().numpy()
    want = ep.correctly_rounded(x.double().numpy(), fmt)
    ulps = ep._ulps(got, want, fmt)
    assert ulps.max() <= 1
    assert ulps.max() == ep.load("accurate")["forward"]["errors"][fmt]["max_ulp"]


def test_paper_tier_error_is_the_specs():
    """The paper's D2: relative error about its Table 8 row (2.679e-3 in float64, before
    the float32 coefficients and arithmetic), as the spec measured."""
    x = np.linspace(-120, 120, 200_001).astype(np.float32)
    got = OPS.exp2(torch.from_numpy(x), tier="paper").double().numpy()
    rel = np.abs(got / np.exp2(x.astype(np.float64)) - 1)
    spec = ep.load("paper")["forward"]["errors"]["float32"]["max_rel_normal"]
    # (this grid is not the spec's: float32 rounding may move the maximum by ~1e-7 relative)
    assert 2.6e-3 < rel.max() <= spec * (1 + 1e-4)


def test_float64_runs_the_program_in_double():
    """float64: the same float32 coefficients in double arithmetic with double's window and
    exponent: relative error that of P itself (< 2.5e-7, degree 5), the range double's."""
    x = torch.cat([torch.linspace(-1070, 1020, 100_001, dtype=torch.float64),
                   torch.tensor([-1074.0, -1022.5, 1023.9, 0.3])])  # fmt: skip
    got = OPS.exp2(x)
    exact = torch.exp2(x)
    normal = exact >= 2.0**-1022
    assert ((got[normal] / exact[normal]) - 1).abs().max() < 2.5e-7
    assert got[-4].item() == 2.0**-1074 and math.isfinite(got[-2].item())
    specials = OPS.exp2(torch.tensor([1024.0, -1076.0, math.inf, -math.inf], dtype=torch.float64))
    assert specials.tolist() == [math.inf, 0.0, math.inf, 0.0]


# ------------------------------------------------------------------ IEEE semantics


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, *HALF_DTYPES], ids=IDS)
def test_special_values(dtype, tier):
    x = torch.tensor([math.nan, -math.inf, math.inf, 0.0, -0.0, 1.0, -1.0, 3.0], dtype=dtype)
    r = OPS.exp2(x, tier=tier)
    assert torch.isnan(r[0])
    assert r[1].item() == 0.0 and not torch.signbit(r[1])
    assert r[2].item() == math.inf
    assert r[3].item() == 1.0 and r[4].item() == 1.0
    assert r[5:].tolist() == [2.0, 0.5, 8.0]  # integers are exact (p(0) = 1 and 2^n)


def test_float32_range_ends():
    x = torch.tensor([-151.0, -150.0, -149.0, -140.0, -126.0, 127.0, 127.99998, 128.0, 200.0])
    r = OPS.exp2(x)
    assert r[0].item() == 0.0 and r[1].item() == 0.0  # 2^-150 is a tie: to even, +0
    assert r[2].item() == 2.0**-149 and r[3].item() == 2.0**-140  # subnormal, exact
    assert r[4].item() == 2.0**-126 and r[5].item() == 2.0**127
    assert math.isfinite(r[6].item()) and r[7].item() == math.inf and r[8].item() == math.inf
    # Just above -150 the correctly rounded result is the smallest subnormal.
    above = torch.tensor([-150.0]).view(torch.int32).sub(1).view(torch.float32)
    assert OPS.exp2(above).item() == 2.0**-149


# ------------------------------------------------------------------ layouts, out=, in place


def _cases():
    return layout_cases(30)


@pytest.mark.parametrize("case", list(_cases()))
def test_layouts_out_and_in_place(case):
    x = _cases()[case]
    r = OPS.exp2(x)
    assert r.shape == x.shape and r.stride() == torch.empty_like(x).stride()
    want = OPS.exp2(x.contiguous())
    assert_same_bits(r.contiguous(), want)
    out = torch.empty_like(x)
    OPS.exp2.out(x, out=out)
    assert_same_bits(out.contiguous(), want)
    y = x.clone()
    assert turbogelu.exp2_(y) is y
    assert_same_bits(y.contiguous(), want)
    assert_same_bits(turbogelu.exp2(x).contiguous(), want)


def test_out_into_a_strided_view():
    x = torch.randn(8, 10) * 20
    buf = torch.zeros(10, 8)
    OPS.exp2.out(x, out=buf.t())
    assert_same_bits(buf.t().contiguous(), OPS.exp2(x))


# ------------------------------------------------------------------ errors


def test_bad_input_is_refused():
    x = torch.randn(8)
    for bad in (torch.int32, torch.bool, torch.complex64):
        with pytest.raises(TypeError, match="turbogelu.exp2: unsupported dtype"):
            turbogelu.exp2(torch.zeros(4, dtype=bad))
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        turbogelu.exp2([1.0])
    with pytest.raises(ValueError, match="tier must be 'accurate' or 'paper'"):
        OPS.exp2(x, tier="fast")
    with pytest.raises(ValueError, match="tier must be"):
        OPS.exp2(x.to("meta"), tier="fast")  # the fake kernel says the same
    with pytest.raises(ValueError, match="backward must be 'default', 'direct' or 'matched'"):
        OPS.exp2(x, backward="exact")
    with pytest.raises(RuntimeError, match="out= tensors are not resized"):
        OPS.exp2.out(x, out=torch.empty(7))
    with pytest.raises(TypeError, match="out has dtype"):
        OPS.exp2.out(x, out=torch.empty(8, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="out is on meta but x is on cpu"):
        OPS.exp2.out(x, out=torch.empty(8, device="meta"))
    with pytest.raises(RuntimeError, match="grad has shape"):
        OPS.exp2_backward(torch.randn(3), x)
    with pytest.raises(RuntimeError, match="does not support autograd"):
        turbogelu.exp2_(x.clone().requires_grad_())


# ------------------------------------------------------------------ opcheck, autograd


def _opcheck_cases():
    x = torch.randn(5, 7) * 10
    gx = x.clone().requires_grad_()
    return [
        (OPS.exp2.default, (x,), {}),
        (OPS.exp2.default, (gx,), {"tier": "paper"}),
        (OPS.exp2.default, (gx,), {"backward": "matched"}),
        (OPS.exp2.out, (x,), {"out": torch.empty_like(x)}),
        (OPS.exp2_.default, (x.clone(),), {}),
        (OPS.exp2_backward.default, (x, x.clone()), {}),
        (OPS.exp2_backward.out, (x, x.clone(), "matched"), {"out": x * 0}),
    ]


@pytest.mark.parametrize("case", range(len(_opcheck_cases())))
def test_opcheck(case):
    op, args, kwargs = _opcheck_cases()[case]
    opcheck(op, args, kwargs)


@pytest.mark.parametrize("tier", TIERS)
def test_default_gradient_is_from_the_saved_result(tier):
    """grad * y * ln 2 (PyTorch's kernels, in the dtype): no recomputation from x."""
    x = (torch.randn(1000, generator=torch.Generator().manual_seed(6)) * 20).requires_grad_()
    g = torch.randn(1000)
    y = turbogelu.exp2(x, tier=tier)
    (dx,) = torch.autograd.grad(y, x, g)
    assert_same_bits(dx, g * y.detach() * LN2)
    assert_same_bits(dx, turbogelu.family.exp2_from_output(g, y.detach()))


@pytest.mark.parametrize("backward", ["direct", "matched"])
def test_gradient_through_the_backward_op(backward):
    x = (torch.randn(1000, generator=torch.Generator().manual_seed(7)) * 20).requires_grad_()
    g = torch.randn(1000)
    (dx,) = torch.autograd.grad(turbogelu.exp2(x, backward=backward), x, g)
    assert_same_bits(dx, OPS.exp2_backward(g, x.detach(), backward))
    exact = g.double() * LN2 * torch.exp2(x.detach().double())
    # The spec's relative error of f' (on its grid: 1.7e-7 direct, 9.3e-6 matched) and the
    # rounding of grad * f' (2^-24), with 1 % for inputs off the spec's grid.
    spec = ep.load("accurate")[f"backward_{backward}"]["errors"]["float32"]["max_rel_normal"]
    assert ((dx.double() - exact).abs() / exact.abs()).max() <= (spec + 2.0**-24) * 1.01


def test_gradcheck_matched():
    """float64, matched: the derivative of the program itself. Away from x = k + 1/2, where
    the reduction switches n (P(1/2) and 2 P(-1/2) differ by ~1e-7: finite differences across
    it would see a step)."""
    x = torch.linspace(-20.2, 20.2, 41, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: turbogelu.exp2(t, backward="matched"), (x,))


def test_second_derivative_of_the_default():
    x = torch.linspace(-5, 5, 101, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(turbogelu.exp2(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    exact = LN2**2 * torch.exp2(x.detach())
    assert ((h - exact) / exact).abs().max() < 1e-6
