"""The backward from the saved result, ``<fn>_backward_from_output(grad, y)`` for sigmoid, tanh
and exp2 and ``softcap_backward_from_output(grad, y, cap)`` (autograd's default for them): bit
for bit a replay of its formula on every instruction set and every 16-bit y, float64, IEEE
special values, layouts, out= and the streaming stores, its errors, opcheck, and that
autograd runs it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from conftest import HALF_DTYPES, assert_same_bits
from op_references import assert_within_an_ulp
from torch.library import opcheck

import turbogelu
import turbogelu.ops as tops
from turbogelu import family

OPS = torch.ops.turbogelu
FUNCTIONS = ("sigmoid", "tanh", "exp2")  # (grad, y); softcap's takes cap too
CAPS = (50.0, 1.0, 0.3)
STORAGE = [torch.float32, torch.float16, torch.bfloat16]
IDS = lambda d: str(d).removeprefix("torch.")  # noqa: E731
LN2_F32 = np.float32(math.log(2.0))  # ln 2 rounded to float32 (0x1.62e430p-1)
SPECIALS = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e-40, -1e-45, 0.5]


def _op(fn: str):
    return getattr(OPS, f"{fn}_backward_from_output")


def _one_minus_y2(y: np.ndarray) -> np.ndarray:
    """fl32(fma(-y, y, 1)) for float32 y: y*y is exact in float64 (48 bits), and s = fl64(1 -
    y*y) rounds to float32 as the exact value does unless s is inexact and sits at a float32
    rounding boundary, which is checked (not assumed) here."""
    y = y.astype(np.float64)
    p = y * y
    s = 1.0 - p
    with np.errstate(invalid="ignore", over="ignore"):
        e = (1.0 - s) - p  # the rounding error of s (Fast2Sum: |1| >= |p| for |y| <= 1)
        inexact = (np.abs(y) <= 1) & (e != 0)
        up = np.nextafter(s, np.inf).astype(np.float32)
        down = np.nextafter(s, -np.inf).astype(np.float32)
        boundary = (up != s.astype(np.float32)) | (down != s.astype(np.float32))
    assert not (inexact & boundary).any(), "the float64 emulation of the fma would round twice"
    # (1 < |y| <= 1.4: 1 - y*y is exact in float64, Sterbenz, as y*y <= 2)
    assert (np.abs(y[np.isfinite(y)]) <= 1.4).all(), "the replay covers |y| <= 1.4"
    return s.astype(np.float32)


def _floored(d: np.ndarray) -> np.ndarray:
    """max(d, +0) with NaN passing: tanh's and softcap's 1 - q^2 where q left [-1, 1]."""
    return np.where(d < 0, np.float32(0), d)


def replay(fn: str, g: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The kernels' formula in float32, each step rounded (numpy float32 operations)."""
    g, y = g.astype(np.float32), y.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        if fn == "sigmoid":
            return (g * (np.float32(1) - y)) * y
        if fn == "tanh":
            return g * _floored(_one_minus_y2(y))
        return (g * y) * LN2_F32


def _ys(fn: str, dtype: torch.dtype) -> torch.Tensor:
    """Every 16-bit value (tanh: those in [-1, 1], its range, and the specials), or float32
    results of the forward over a wide sweep, with the specials."""
    if dtype in HALF_DTYPES:
        y = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
        if fn == "tanh":
            y = y[~(y.float().abs() > 1) | ~torch.isfinite(y)]
        return y
    x = torch.cat([torch.linspace(-30, 30, 40_001), torch.randn(20_000) * 8])
    y = getattr(turbogelu, fn)(x)
    return torch.cat([y, torch.tensor(SPECIALS)])


def _grads(n: int, dtype: torch.dtype, seed: int = 1) -> torch.Tensor:
    g = torch.randn(n, generator=torch.Generator().manual_seed(seed)) * 3
    g[:8] = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-30])
    return g.to(dtype)


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_bits_are_the_formula(fn, dtype, isa):
    y = _ys(fn, dtype)
    g = _grads(y.numel(), dtype)
    want = torch.from_numpy(replay(fn, g.float().numpy(), y.float().numpy())).to(dtype)
    assert_same_bits(_op(fn)(g, y), want, f"{fn} {dtype} {isa}")


def _inv32(cap: float) -> np.float32:
    """1 / cap as the op rounds it: cap to float32, then a float32 division."""
    return np.float32(1) / np.float32(cap)


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("cap", CAPS)
def test_softcap_bits_are_the_formula(cap, dtype, isa):
    """q = fl(y * fl(1 / cap)), grad * fma(-q, q, 1): every 16-bit y in [-cap, cap] (the
    forward's range) and the specials, or float32 results of the forward."""
    if dtype in HALF_DTYPES:
        y = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
        y = y[~(y.float().abs() > cap) | ~torch.isfinite(y)]
    else:
        x = torch.cat([torch.linspace(-30, 30, 40_001) * cap, torch.randn(20_000) * 3 * cap])
        y = torch.cat([turbogelu.softcap(x, cap), torch.tensor(SPECIALS) * cap])
    g = _grads(y.numel(), dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        q = y.float().numpy() * _inv32(cap)
        want = g.float().numpy() * _floored(_one_minus_y2(q))
    got = OPS.softcap_backward_from_output(g, y, cap)
    assert_same_bits(got, torch.from_numpy(want).to(dtype), f"cap {cap} {dtype} {isa}")


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_float64_is_the_formula_in_float64(fn):
    """float64 rounds each step in float64 (tanh's 1 - y^2 once, checked with exact
    fractions)."""
    y = torch.cat([torch.rand(2_000, dtype=torch.float64) * 2 - 1, torch.tensor(SPECIALS[:6])])
    g = torch.randn(y.numel(), dtype=torch.float64)
    got = _op(fn)(g, y)
    if fn == "sigmoid":
        want = g * (1 - y) * y
    elif fn == "tanh":
        r = [  # floored at +0 (the specials' y = +-inf; NaN passes)
            max(float(Fraction(1) - Fraction(v) ** 2), 0.0) if math.isfinite(v) else 1 - v * v
            for v in y.tolist()
        ]
        r = [0.0 if v < 0 else v for v in r]
        want = g * torch.tensor(r, dtype=torch.float64)
    else:
        want = g * y * math.log(2.0)
    assert_same_bits(got, want, fn)


def test_special_values_follow_the_formula():
    """No special case: a NaN or an infinity in grad or y gives what the formula gives."""
    nan, inf = math.nan, math.inf
    g = torch.tensor([nan, 1.0, inf, inf, 2.0, -inf])
    y = torch.tensor([0.5, nan, 0.0, 1.0, 0.25, 0.5])
    s = _op("sigmoid")(g, y)
    assert torch.isnan(s[:4]).all() and s[4] == 2.0 * 0.75 * 0.25 and s[5] == -inf
    t = _op("tanh")(torch.tensor([1.0, 1.0, inf, nan]), torch.tensor([1.0, -1.0, 1.0, 0.0]))
    assert t[0] == 0 and t[1] == 0 and torch.isnan(t[2:]).all()
    e = _op("exp2")(torch.tensor([1.0, 0.0, 1.0]), torch.tensor([inf, inf, 0.0]))
    assert e[0] == inf and torch.isnan(e[1]) and e[2] == 0


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_layouts_out_and_streaming_stores(dtype, isa):
    """Non-contiguous and transposed inputs, out= (into grad itself too), and the streaming
    stores at every offset in a cache line: the bits of the contiguous call."""
    gen = torch.Generator().manual_seed(3)
    y = torch.rand(64, 130, generator=gen).to(dtype)
    g = torch.randn(64, 130, generator=gen).to(dtype)
    for fn in FUNCTIONS:
        op = _op(fn)
        want = op(g, y)
        assert_same_bits(op(g.t().contiguous().t(), y), want, fn)
        assert_same_bits(op(g[:, ::2], y[:, ::2]), want[:, ::2], fn)
        out = torch.empty_like(y)
        op.out(g, y, out=out)
        assert_same_bits(out, want, fn)
        g2 = g.clone()
        op.out(g2, y, out=g2)
        assert_same_bits(g2, want, fn)
        want_sc = OPS.softcap_backward_from_output(g, y, 0.7)
        assert_same_bits(OPS.softcap_backward_from_output(g[:, ::2], y[:, ::2], 0.7),
                         want_sc[:, ::2])  # fmt: skip
        out_sc = torch.empty_like(y)
        OPS.softcap_backward_from_output.out(g, y, 0.7, out=out_sc)
        assert_same_bits(out_sc, want_sc)
        for offset in range(0, 64 // y.element_size() + 1, 3):
            for store in ("plain", "stream"):
                with tops.use_cpu_store(store):
                    o = torch.empty(y.numel() + offset, dtype=dtype)[offset:]
                    op.out(g.flatten(), y.flatten(), out=o)
                assert_same_bits(o, want.flatten(), f"{fn} {store} offset {offset}")


def test_threads_give_the_same_bits():
    y = torch.rand(1_000_003)
    g = torch.randn(1_000_003)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _op("sigmoid")(g, y)
        torch.set_num_threads(max(2, old))
        assert_same_bits(_op("sigmoid")(g, y), one)
    finally:
        torch.set_num_threads(old)


def test_errors():
    op = _op("sigmoid")
    y = torch.rand(4)
    with pytest.raises(TypeError, match="sigmoid_backward_from_output"):
        op(torch.ones(4, dtype=torch.int32), torch.ones(4, dtype=torch.int32))
    with pytest.raises(TypeError, match="grad has dtype"):
        op(torch.ones(4, dtype=torch.float64), y)
    with pytest.raises(RuntimeError, match="no broadcasting"):
        op(torch.ones(1), y)
    with pytest.raises(RuntimeError, match="out has shape"):
        op.out(torch.ones(4), y, out=torch.empty(5))
    with pytest.raises(RuntimeError, match="on meta"):
        op(torch.ones(4, device="meta"), y)
    with pytest.raises(RuntimeError, match="out= form does not support autograd"):
        op.out(torch.ones(4, requires_grad=True), y, out=torch.empty(4))
    sc = OPS.softcap_backward_from_output
    for cap in (0.0, -1.0, math.inf, math.nan, 1e-50):
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            sc(torch.ones(4), y, cap)
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            sc(torch.ones(4, device="meta"), y.to("meta"), cap)
    # meta tensors: the fake kernel's checks and shape
    assert op(torch.ones(3, 2, device="meta"), torch.ones(3, 2, device="meta")).shape == (3, 2)
    with pytest.raises(RuntimeError, match="no broadcasting"):
        op(torch.ones(3, device="meta"), torch.ones(2, device="meta"))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_opcheck(fn):
    y = torch.rand(5, 7) * 2 - 1
    g = torch.randn(5, 7)
    opcheck(_op(fn).default, (g, y))
    opcheck(_op(fn).default, (g.clone().requires_grad_(), y.clone().requires_grad_()))
    opcheck(_op(fn).out, (g, y), {"out": torch.empty_like(y)})


def test_softcap_opcheck_and_second_derivative():
    y = torch.rand(5, 7) * 5 - 2.5
    g = torch.randn(5, 7)
    op = OPS.softcap_backward_from_output
    opcheck(op.default, (g, y, 3.0))
    opcheck(op.default, (g.clone().requires_grad_(), y.clone().requires_grad_(), 3.0))
    opcheck(op.out, (g, y, 3.0), {"out": torch.empty_like(y)})
    y64 = (torch.rand(16, dtype=torch.float64) * 5 - 2.5).requires_grad_()
    g64 = torch.randn(16, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: op(a, b, 3.0), (g64, y64))
    assert torch.autograd.gradgradcheck(lambda a, b: op(a, b, 3.0), (g64, y64))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_second_derivative_of_the_op(fn):
    """The op is differentiable in grad and y (as aten's sigmoid_backward and tanh_backward
    are): gradcheck and gradgradcheck in float64."""
    y = (torch.rand(16, dtype=torch.float64) * 1.8 - 0.9).requires_grad_()
    g = torch.randn(16, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(_op(fn), (g, y))
    assert torch.autograd.gradgradcheck(_op(fn), (g, y))


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_autograd_default_runs_it_on_the_saved_result(fn, dtype):
    x = (torch.randn(1000, generator=torch.Generator().manual_seed(4)) * 3).to(dtype)
    g = torch.randn(1000).to(dtype)
    xr = x.clone().requires_grad_()
    y = getattr(turbogelu, fn)(xr)
    (dx,) = torch.autograd.grad(y, xr, g)
    assert_same_bits(dx, _op(fn)(g, y.detach()), f"{fn} {dtype}")


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_softcap_autograd_default_runs_it_on_the_saved_result(dtype):
    x = (torch.randn(1000, generator=torch.Generator().manual_seed(4)) * 8).to(dtype)
    g = torch.randn(1000).to(dtype)
    xr = x.clone().requires_grad_()
    y = turbogelu.softcap(xr, 2.5)
    (dx,) = torch.autograd.grad(y, xr, g)
    assert_same_bits(dx, OPS.softcap_backward_from_output(g, y.detach(), 2.5), str(dtype))
    (dd,) = torch.autograd.grad(turbogelu.softcap(xr, 2.5, backward="direct"), xr, g)
    assert_same_bits(dd, OPS.softcap_backward(g, x, 2.5, "direct"), str(dtype))


def test_softcap_from_the_result_is_the_more_accurate_in_float32():
    """As tanh's: in float32 the derivative from y (error at most 2|q| times the forward's
    3e-5) beats the direct fit of tanh' from x; in bfloat16 y's rounding makes it worse."""
    cap = 2.5
    x = torch.linspace(-12, 12, 200_001) * cap
    exact = 1 - torch.tanh(x.double() / cap) ** 2
    one = torch.ones_like(x)
    y = turbogelu.softcap(x, cap)
    err_y = (OPS.softcap_backward_from_output(one, y, cap).double() - exact).abs().max()
    err_x = (OPS.softcap_backward(one, x, cap, "direct").double() - exact).abs().max()
    assert err_y <= 2 * 3e-5 and err_y < err_x, (err_y, err_x)


def test_other_devices_use_the_formula_by_torch_ops():
    """The CUDA and MPS registrations compute the formula with PyTorch's ops (run here on CPU
    tensors: what they compute, not where). In float64, to a few ulps of |grad|, the size of
    the terms: PyTorch's kernels may fuse a multiply and a subtraction (how is its build's and
    CPU's choice, not asserted here), and 1 - y^2 near y = 1 cancels, so a bound relative to
    the result itself would fail by chance (it did, 1 run in 4, with unseeded inputs)."""
    gen = torch.Generator().manual_seed(3)
    y = torch.rand(100, dtype=torch.float64, generator=gen)
    g = torch.randn(100, dtype=torch.float64, generator=gen)
    bound = 1e-15 * g.abs()
    for fn in FUNCTIONS:
        got = family._from_output_elsewhere(fn, g, y)
        want = {"sigmoid": g * (1 - y) * y, "tanh": g * (1 - y * y), "exp2": g * y * math.log(2)}
        assert ((got - want[fn]).abs() <= bound).all(), fn
    got = family._from_output_elsewhere("softcap", g, y * 3, 3.0)
    q = y * 3 * float(_inv32(3.0))  # 1/cap rounded as the kernels round it
    assert ((got - g * (1 - q**2)).abs() <= bound).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_other_devices_formula_gives_the_cpu_kernels_results(dtype):
    """CUDA's and MPS's default backward (the formula by PyTorch's ops, run here on CPU tensors)
    against the CPU's from-output kernels, every function, in each dtype. PyTorch's float32
    arithmetic is its own (how its kernels round is not this package's to assert), so: within
    2 float32 ulps in float32, within 1 ulp of the 16-bit result in 16-bit and equal in all
    but 1 in 1000 elements (computing in the 16-bit dtype itself, as before, differed in about
    a quarter of them)."""
    k = torch.arange(100_000, dtype=torch.float64)
    x = (((k * 7919) % 19999 - 9999) / 1111.0).to(dtype)
    g = (((k * 104729) % 997 - 498) / 256.0).to(dtype)
    for fn in FUNCTIONS + ("softcap",):
        cap = 2.5 if fn == "softcap" else 1.0
        args = (cap,) if fn == "softcap" else ()
        y = getattr(OPS, fn)(x.clamp(max=10) if fn == "exp2" else x, *args)
        want = getattr(OPS, f"{fn}_backward_from_output")(g, y, *args)
        assert_within_an_ulp(family._from_output_elsewhere(fn, g, y, cap), want, fn)


@pytest.mark.parametrize("dtype", [torch.float64, *STORAGE], ids=IDS)
def test_the_default_gradient_never_turns_negative(dtype):
    """tanh's and softcap's from-output factor 1 - q^2 is floored at +0 (issue 37): where y
    rounds to or above the cap, or y * fl(1/cap) above 1, it was negative (bfloat16
    softcap(1e4, 32.375) gave -0.00775; in float64 and bfloat16 hundreds of caps did), a
    gradient of the wrong sign for a rising function. Over 809 caps every input's gradient is
    >= 0, through autograd on the CPU's kernels and on the formula other devices run. At
    saturation (y = the cap as stored) it is 0 or the residue of q's roundings, which the
    formula cannot tell from a value just inside: y is the cap rounded to the dtype and q =
    y * fl(1/cap) (fl(1/cap) in float32, also for float64), so 1 - q^2 <= 2 (u + 2^-24)
    with u the dtype's unit roundoff; asserted as 4 eps (float32 eps for float64)."""
    caps = torch.logspace(-1.3, 3, 809, dtype=torch.float64).tolist() + [32.375, 30.0]
    eps = torch.finfo(torch.float32 if dtype == torch.float64 else dtype).eps
    for cap in caps:
        x = torch.tensor([-1e4, -40.0, -1.0, 0.0, 1.0, 40.0, 1e4], dtype=torch.float64) * cap
        x = x.to(dtype).requires_grad_()
        y = turbogelu.softcap(x, cap)
        (g,) = torch.autograd.grad(y.sum(), x)
        other = family._from_output_elsewhere("softcap", torch.ones_like(y), y.detach(), cap)
        for got in (g, other):
            assert (got >= 0).all(), (cap, got)
            assert got[0] <= 4 * eps and got[-1] <= 4 * eps, (cap, got)
    if dtype in HALF_DTYPES:
        y = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
        y = y[~torch.isnan(y)]
        for got in (_op("tanh")(torch.ones_like(y), y), family._from_output_elsewhere(
                "tanh", torch.ones_like(y), y)):  # fmt: skip
            assert (got >= 0).all() and (got[y.float().abs() >= 1] == 0).all()
