"""turbogelu.softmax (CPU): softmax along a dim by the exp2 op's kernels, against
torch.softmax in float64 with a stated tolerance; special values, dims and layouts, the
backward, fakes / opcheck, errors, and the refusal on other devices."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import ISAS, assert_same_bits
from torch.library import opcheck

import turbogelu
import turbogelu.ops as tops

OPS = torch.ops.turbogelu
IDS = lambda d: str(d).removeprefix("torch.")  # noqa: E731


def _logits(shape=(32, 256), scale=4.0, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(dtype)


# The error budget of one element, relative to y: t = fl(fl(x - m) log2(e)) has an absolute
# error up to ~|t| 2^-23 (|t| <= ~60 here: ~1e-5 relative in 2^t, but only where y < 2^-60
# hardly counts), exp2's 2 ulp (2.4e-7), the float32 sum of n terms (n 2^-24 at worst) and
# the final scaling (2^-24). Stated bound: 1e-6 absolute plus 3e-6 relative at n = 256.
ATOL, RTOL = 1e-6, 3e-6


@pytest.mark.parametrize("tier", ["accurate"])
@pytest.mark.parametrize("scale", [0.1, 4.0, 30.0])
def test_float32_matches_torch_softmax(scale, tier):
    x = _logits(scale=scale)
    want = torch.softmax(x.double(), dim=-1)
    got = turbogelu.softmax(x, tier=tier)
    torch.testing.assert_close(got.double(), want, atol=ATOL, rtol=RTOL)
    assert torch.allclose(got.double().sum(-1), torch.ones(x.shape[0], dtype=torch.float64))


def test_paper_tier_error_is_its_exp2_s():
    """The paper's D2 exp2 (relative error <= 2.68e-3) gives probabilities within about that
    (its error partly cancels in the normalisation)."""
    x = _logits(scale=4.0)
    want = torch.softmax(x.double(), dim=-1)
    got = turbogelu.softmax(x, tier="paper").double()
    rel = ((got - want).abs() / want).max().item()
    assert 1e-4 < rel < 2 * 2.68e-3 * 1.01  # |e_i - mean e| <= 2 max |e|, plus rounding


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=IDS)
def test_16_bit_is_float32_rounded_once(dtype):
    x = _logits(dtype=dtype)
    got = turbogelu.softmax(x)
    assert got.dtype == dtype
    assert_same_bits(got, turbogelu.softmax(x.float()).to(dtype))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
def test_dims_and_layouts(dim):
    x = _logits((6, 40, 33), seed=1)
    got = turbogelu.softmax(x, dim)
    assert got.is_contiguous() and got.shape == x.shape
    torch.testing.assert_close(got.double(), torch.softmax(x.double(), dim), atol=ATOL, rtol=RTOL)
    xt = x.transpose(0, 2)
    assert_same_bits(turbogelu.softmax(xt, dim), turbogelu.softmax(xt.contiguous(), dim))


def test_special_values():
    inf, nan = math.inf, math.nan
    x = torch.tensor(
        [
            [0.0, -inf, 1.0, -inf],  # masked entries: exactly 0
            [nan, 1.0, 2.0, 3.0],  # a NaN makes the row NaN
            [-inf, -inf, -inf, -inf],  # nothing left: NaN, as torch.softmax
            [1e30, -1e30, 0.0, 5.0],
        ]
    )
    got = turbogelu.softmax(x)
    want = torch.softmax(x, -1)
    assert got[0, 1].item() == 0.0 and got[0, 3].item() == 0.0
    assert torch.isnan(got[1]).all() and torch.isnan(got[2]).all()
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert got[3].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert turbogelu.softmax(torch.empty(0, 5)).shape == (0, 5)
    assert turbogelu.softmax(torch.empty(3, 0)).shape == (3, 0)


def test_backward_is_the_softmax_formula():
    x = _logits((8, 64), seed=2).requires_grad_()
    g = torch.randn(8, 64, generator=torch.Generator().manual_seed(3))
    y = turbogelu.softmax(x)
    (dx,) = torch.autograd.grad(y, x, g)
    yd = y.detach()
    assert_same_bits(dx, (g - (g * yd).sum(-1, keepdim=True)) * yd)
    xd = x.detach().double().requires_grad_()
    (want,) = torch.autograd.grad(torch.softmax(xd, -1), xd, g.double())
    torch.testing.assert_close(dx.double(), want, atol=1e-6, rtol=1e-5)
    x0 = _logits((5, 7), seed=4).requires_grad_()
    (d0,) = torch.autograd.grad(turbogelu.softmax(x0, 0), x0, torch.ones(5, 7) * 2)
    assert d0.abs().max() < 1e-6  # a constant gradient along the dim gives 0
    # bfloat16: the formula in float32 on the bfloat16 values, rounded once
    xb = x.detach().bfloat16().requires_grad_()
    yb = turbogelu.softmax(xb)
    (db,) = torch.autograd.grad(yb, xb, g.bfloat16())
    g32, y32 = g.bfloat16().float(), yb.detach().float()
    assert_same_bits(db, ((g32 - (g32 * y32).sum(-1, keepdim=True)) * y32).bfloat16())


def test_opcheck():
    x = _logits((5, 7), seed=5)
    opcheck(OPS.softmax.default, (x,), {})
    opcheck(OPS.softmax.default, (x.clone().requires_grad_(), 0), {"tier": "paper"})


def test_errors():
    x = torch.randn(4, 5)
    with pytest.raises(TypeError, match="float64 is not supported"):
        turbogelu.softmax(x.double())
    with pytest.raises(TypeError, match="float64 is not supported"):
        turbogelu.softmax(x.double().to("meta"))  # the fake says the same
    with pytest.raises(TypeError, match="turbogelu.softmax: unsupported dtype"):
        turbogelu.softmax(x.int())
    with pytest.raises(ValueError, match="turbogelu.softmax: tier must be"):
        turbogelu.softmax(x, tier="fast")
    with pytest.raises(RuntimeError, match="at least one dimension"):  # the raw op
        torch.ops.turbogelu.softmax(torch.tensor(1.0))  # (the function takes it: as torch's)
    with pytest.raises(IndexError):
        turbogelu.softmax(x, 2)
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        turbogelu.softmax([1.0])


def test_other_devices_refuse_clearly():
    for key in ("CUDA", "MPS"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key("turbogelu::softmax", key)
    with pytest.raises(NotImplementedError, match="only the CPU has a kernel"):
        turbogelu.family._softmax_elsewhere(torch.empty(2, device="meta"))


# ---------------------------------------------------------------- the row kernel's bits
LOG2E = torch.tensor(1.4426950408889634, dtype=torch.float32)  # log2(e) rounded to float32


def _replay(x: torch.Tensor, tier: str) -> torch.Tensor:
    """The documented program (kernels/cpu/family_loops.h, family_softmax) in torch float32
    operations along the last dim: e by the exp2 op, element j summed into partial j mod 16
    in increasing j, the 16 partials halved (p[k] += p[k + w], w = 8, 4, 2, 1), y = e * (1/s)
    rounded once to x's dtype."""
    xf = x.float()
    m = xf.amax(-1, keepdim=True)
    e = turbogelu.exp2((xf - m) * LOG2E, tier=tier)
    n = e.shape[-1]
    padded = torch.nn.functional.pad(e, (0, -n % 16))  # e = +0 beyond the row
    p = torch.zeros(*e.shape[:-1], 16)
    for chunk in padded.split(16, dim=-1):  # one float32 addition per partial per step
        p = p + chunk
    for w in (8, 4, 2, 1):
        p = p[..., :w] + p[..., w : 2 * w]
    return (e * (1.0 / p)).to(x.dtype)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=IDS)
@pytest.mark.parametrize("cols", [1, 7, 16, 31, 33, 100, 256, 1000])
def test_bits_are_the_documented_sum_order_on_every_isa(cols, dtype, isa):
    """Every ISA gives the replay's bits (so the same bits as each other), tails included.
    37 rows: under 128 columns, blocks of 32 (16 on AVX2) short rows side by side in SIMD lanes
    and a rest lane by lane (family_softmax_lanes); from 128, the row kernel."""
    x = _logits((37, cols), scale=6.0, seed=cols, dtype=dtype)
    for tier in ("accurate", "paper"):
        with tops.use_cpu_isa(isa):
            got = turbogelu.softmax(x, tier=tier)
        assert_same_bits(got, _replay(x, tier), f"{isa} {tier} cols={cols}")


# Vectors along another dim, or rows shorter than the row kernel's minimum, go side by side in
# SIMD lanes (family_softmax_lanes): inner 70 gives whole blocks of 32 (16 on AVX2) and a
# narrower rest, inner 16 runs of one vector from two slices (AVX-512; whole blocks on AVX2),
# inner 24 on AVX2 a block, then runs across two slices, inner 3 lanes gathered across the
# outer dim; each lane must keep the bits of the replay of its vector.
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=IDS)
@pytest.mark.parametrize("cols", [1, 17, 33, 130])
@pytest.mark.parametrize("inner", [70, 24, 16, 3])
def test_bits_along_other_dims_are_the_rows_bits_on_every_isa(inner, cols, dtype, isa):
    x = _logits((3, cols, inner), scale=6.0, seed=cols + inner, dtype=dtype)
    for tier in ("accurate", "paper"):
        with tops.use_cpu_isa(isa):
            got = turbogelu.softmax(x, 1, tier=tier)
        want = _replay(x.movedim(1, -1), tier).movedim(-1, 1)
        assert_same_bits(got, want, f"{isa} {tier} cols={cols} inner={inner}")


def test_special_values_on_every_isa():
    inf, nan = math.inf, math.nan
    row = [0.0, -0.0, -inf] * 11  # 33 columns: a tail on every ISA
    x = torch.tensor([row, [nan] + row[1:], [-inf] * 33, row[:-1] + [inf]])
    for isa in ISAS:
        with tops.use_cpu_isa(isa):
            got = turbogelu.softmax(x)
        assert torch.isnan(got[1:]).all(), isa
        assert_same_bits(got[0], _replay(x[:1], "accurate")[0], isa)
        # the same vectors along dim 0, side by side in lanes: the same bits and NaNs
        wide = x.repeat(10, 1)  # 40 vectors: a whole block and a rest
        with tops.use_cpu_isa(isa):
            cols = turbogelu.softmax(wide.T.contiguous(), 0).T
        assert_same_bits(cols, got.repeat(10, 1), isa)
