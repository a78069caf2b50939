"""What only the activation family's surface has (the errors, opcheck, gradcheck and autograd
checks it shares with GELU are tests/test_ops.py's, over every row of the table): softcap's cap
and swiglu's two inputs, the default gradient from the saved result (and its second
derivative), the modules and replace_activations, softplus' F.softplus defaults,
``turbogelu.family`` forwarding, and a real client (torchvision's efficientnet_b0). Every
row under torch.compile, a LLaMA-style SwiGLU MLP block among them: test_ops_compile.py."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import assert_same_bits
from torch import nn

import turbogelu
from turbogelu import family

OPS = torch.ops.turbogelu


# ------------------------------------------------------------------ errors


def test_softcap_cap_must_be_positive_and_finite():
    x = torch.randn(8)
    for cap in (0.0, -1.0, math.inf, math.nan, 1e39, 1e-46):
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            OPS.softcap(x, cap)
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            OPS.softcap_backward(x, x, cap)
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            OPS.softcap(x.to("meta"), cap)  # the fake kernel says the same
    with pytest.raises(ValueError, match="cap must be positive"):
        turbogelu.Softcap(-2.0)


def test_swiglu_refuses_mismatched_inputs():
    """a and b of one shape and dtype, on one device: no broadcasting (its backward's errors
    name the backward op, in the kernels and the fake kernels alike)."""
    for device in ("cpu", "meta"):
        x = torch.randn(4, 6, device=device)
        with pytest.raises(RuntimeError, match=r"turbogelu\.swiglu_backward: b has shape"):
            OPS.swiglu_backward(x, x, torch.randn(6, 4, device=device))
    a = torch.randn(4, 6)
    with pytest.raises(RuntimeError, match="no broadcasting"):
        OPS.swiglu(a, torch.randn(6))
    with pytest.raises(TypeError, match="b has dtype"):
        OPS.swiglu(a, a.double())
    with pytest.raises(RuntimeError, match="grad has shape"):
        OPS.swiglu_backward(torch.randn(3), a, a)
    with pytest.raises(RuntimeError, match="no broadcasting"):
        OPS.swiglu(a.to("meta"), torch.randn(6, device="meta"))
    with pytest.raises(RuntimeError, match="b is on meta but a is on cpu"):
        OPS.swiglu(a, a.to("meta"))
    with pytest.raises(ValueError, match="odd size"):
        turbogelu.SwiGLU()(torch.randn(2, 5))


# ------------------------------------------------------------------ the default gradient


@pytest.mark.parametrize("fn", ["sigmoid", "tanh"])
def test_second_derivative_of_the_default(fn):
    """The default backward from y is PyTorch's formula, which autograd differentiates again
    (through y's own backward): close to the exact second derivative (float64, the accurate
    tier's forward error times small factors)."""
    x = torch.linspace(-6, 6, 1001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(getattr(turbogelu, fn)(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    t = x.detach()
    s = torch.sigmoid(t) if fn == "sigmoid" else torch.tanh(t)
    exact = s * (1 - s) * (1 - 2 * s) if fn == "sigmoid" else -2 * s * (1 - s * s)
    assert (h - exact).abs().max() < 5e-4


def _exact_derivative(fn: str, x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x.double())
    return s * (1 - s) if fn == "sigmoid" else 1 - torch.tanh(x.double()) ** 2


@pytest.mark.parametrize("fn", sorted(family.FROM_OUTPUT))
@pytest.mark.parametrize("tier", family.TIERS)
def test_default_gradient_from_the_saved_result(fn, tier):
    """sigmoid's and tanh's autograd default: PyTorch's formula on the polynomial's result,
    saved in place of x. In float32 its error is at most |d f'/dy| (|1 - 2y| <= 1 for sigmoid,
    2|y| <= 2 for tanh) times the forward's 3e-5, and smaller than the direct fit's from x
    (measured: 2.9e-5 against 4.3e-5, 5.5e-5 against 1.6e-4); in bfloat16 it inherits the
    rounding of y, and "direct" is the more accurate."""
    x = torch.linspace(-12, 12, 200_001).requires_grad_()
    y = getattr(turbogelu, fn)(x, tier=tier)
    (got,) = torch.autograd.grad(y, x, torch.ones_like(x))
    # Exactly PyTorch's backward applied to our result: no recomputation from x.
    assert_same_bits(got, family.FROM_OUTPUT[fn](torch.ones_like(x), y.detach()))
    exact = _exact_derivative(fn, x.detach())
    err_output = (got.double() - exact).abs().max().item()
    direct = getattr(OPS, f"{fn}_backward")(torch.ones_like(x), x.detach(), "direct", tier)
    err_direct = (direct.double() - exact).abs().max().item()
    if tier == "accurate":
        slope = 1.0 if fn == "sigmoid" else 2.0
        assert err_output <= slope * 3e-5 and err_output < err_direct, (err_output, err_direct)
    xb = x.detach().to(torch.bfloat16).requires_grad_()
    (gb,) = torch.autograd.grad(getattr(turbogelu, fn)(xb, tier=tier), xb, torch.ones_like(xb))
    db = getattr(OPS, f"{fn}_backward")(torch.ones_like(xb), xb.detach(), "direct", tier)
    exact_b = _exact_derivative(fn, xb.detach())
    if tier == "accurate":
        assert (db.double() - exact_b).abs().max() < (gb.double() - exact_b).abs().max()


# ------------------------------------------------------------------ modules


def test_silu_module_in_place():
    """(Every row's module against its function: test_module.py.)"""
    x = torch.randn(3, 8)
    y = x.clone()
    turbogelu.SiLU(inplace=True)(y)
    assert_same_bits(y, turbogelu.silu(x))


def test_replace_activations_counts_and_keeps_sharing():
    shared = nn.SiLU()
    model = nn.Sequential(
        nn.Linear(4, 4), shared, nn.Sequential(shared, nn.Sigmoid(), nn.Tanh()), nn.GELU("tanh")
    )
    counts = turbogelu.replace_activations(model)
    assert counts == {"gelu": 1, "silu": 1, "sigmoid": 1, "tanh": 1, "softplus": 0}
    assert isinstance(model[1], turbogelu.SiLU) and model[1] is model[2][0]
    assert isinstance(model[3], turbogelu.GELU) and model[3].approximate == "tanh"
    assert turbogelu.replace_activations(model) == {k: 0 for k in counts}
    m2 = nn.Sequential(nn.SiLU(), nn.Tanh())
    assert turbogelu.replace_activations(m2, kinds=("tanh",)) == {"tanh": 1}
    assert type(m2[0]) is nn.SiLU
    with pytest.raises(ValueError, match="unknown kind"):
        turbogelu.replace_activations(m2, kinds=("relu",))
    with pytest.raises(TypeError, match="expects an nn.Module"):
        turbogelu.replace_activations(torch.randn(2))


def test_efficientnet_b0_logits_barely_move():
    """torchvision's efficientnet_b0 (SiLU and sigmoid in squeeze-excitation), random weights,
    eval mode, a fixed batch: the logits change by less than 1e-3 relative in float32."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.efficientnet_b0(weights=None).eval()
    x = torch.randn(2, 3, 96, 96)
    with torch.no_grad():
        want = model(x)
        counts = turbogelu.replace_activations(model)
        got = model(x)
    assert counts["silu"] > 10 and counts["sigmoid"] > 10
    rel = (got - want).norm() / want.norm()
    assert rel < 1e-3, float(rel)


def test_family_module_lists_the_functions():
    assert family.FUNCTIONS == ("sigmoid", "tanh", "silu", "softcap", "swiglu", "exp2", "softplus")
    for name in family.FUNCTIONS:
        assert callable(getattr(turbogelu, name))


def test_one_cap_rule_for_the_function_and_the_module():
    """softcap and Softcap take the same caps: a Python or numpy real number; a bool, a tensor
    and None are refused by both with the same TypeError (issue 36, item 8: the module refused
    np.float32(30.) and a 0-dim tensor that the function took; True was 1.0 to the function)."""
    import numpy as np

    x = torch.randn(8)
    expected = turbogelu.softcap(x, 30.0)
    for cap in (np.float32(30.0), np.float64(30.0), 30, np.int64(30)):
        assert torch.equal(turbogelu.softcap(x, cap), expected), cap
        assert torch.equal(turbogelu.Softcap(cap)(x), expected), cap
        y = x.clone()
        assert torch.equal(turbogelu.softcap_(y, cap), expected), cap
    for cap in (True, torch.tensor(30.0), None, "30", np.bool_(True)):
        with pytest.raises(TypeError, match="cap must be a real number"):
            turbogelu.softcap(x, cap)
        with pytest.raises(TypeError, match="cap must be a real number"):
            turbogelu.Softcap(cap)
        with pytest.raises(TypeError, match="cap must be a real number"):
            turbogelu.softcap_(x.clone(), cap)


def test_bad_arguments_get_the_ops_own_messages():
    """Each says what is wrong in the op's words, not PyTorch's generic ones (issue 36, item 8;
    gelu's approximate=None: tests/test_ops.py)."""
    x = torch.randn(3, 4)
    for dim in (2, 3, -3):
        with pytest.raises(IndexError, match=f"dim {dim} is out of range for x of shape"):
            turbogelu.SwiGLU(dim=dim)(x)
    with pytest.raises(IndexError, match="x must have a dimension to split"):
        turbogelu.SwiGLU()(torch.randn(()))
    assert turbogelu.SwiGLU(dim=-2)(torch.randn(4, 3)).shape == (2, 3)
    with pytest.raises(TypeError, match="kinds must be a kind or a sequence"):
        turbogelu.replace_activations(torch.nn.Sequential(torch.nn.GELU()), kinds=None)


# ------------------------------------------------------------------ softplus


def test_softplus_takes_only_f_softplus_defaults():
    """softplus computes F.softplus's beta = 1, threshold = 20 only: the defaults are taken,
    positionally or by name, anything else is refused by the function and the module alike."""
    x = torch.randn(16)
    want = turbogelu.softplus(x)
    assert_same_bits(turbogelu.softplus(x, 1.0, 20.0), want)
    assert_same_bits(turbogelu.softplus(x, beta=1, threshold=20), want)
    assert_same_bits(turbogelu.Softplus()(x), want)
    for beta, threshold in ((2.0, 20.0), (1.0, 10.0), (0.5, 5.0)):
        with pytest.raises(ValueError, match="only beta=1 and threshold=20"):
            turbogelu.softplus(x, beta, threshold)
        with pytest.raises(ValueError, match="only beta=1 and threshold=20"):
            turbogelu.Softplus(beta, threshold)
    assert "beta=1, threshold=20" in repr(turbogelu.Softplus())


def test_replace_activations_takes_softplus_with_its_defaults_only():
    default, shared, other = nn.Softplus(), nn.Softplus(beta=1.0, threshold=20.0), nn.Softplus(2)
    model = nn.Sequential(default, shared, nn.Sequential(shared, other, nn.Softplus(threshold=5)))
    counts = turbogelu.replace_activations(model, kinds="softplus")
    assert counts == {"softplus": 2}
    assert isinstance(model[0], turbogelu.Softplus) and model[1] is model[2][0]
    assert model[2][1] is other and type(model[2][2]) is nn.Softplus  # left as they are
    x = torch.randn(3, 5)
    assert_same_bits(model[0](x), turbogelu.softplus(x))
    assert turbogelu.replace_activations(model, kinds="softplus") == {"softplus": 0}


def test_softplus_is_close_to_f_softplus_and_compiles():
    x = torch.linspace(-30, 30, 100_001)
    assert (turbogelu.softplus(x) - torch.nn.functional.softplus(x)).abs().max() <= 3e-5 + 1e-6
    f = torch.compile(lambda t: turbogelu.softplus(t) * 2, fullgraph=True, backend="eager")
    assert_same_bits(f(x), turbogelu.softplus(x) * 2)
    xr = torch.randn(64, requires_grad=True)
    turbogelu.softplus(xr).sum().backward()
    # the default (direct) derivative within its spec's measured error (beyond half an ulp of
    # a value in (0, 1), at most 2^-25)
    from turbogelu.approx import family_programs as fp

    bound = fp.load("softplus")["backward_direct"]["errors"]["float32"]["max_abs_float32"]
    assert (xr.grad - torch.sigmoid(xr.detach())).abs().max() <= bound + 2.0**-25


def test_turbogelu_family_forwards_to_the_one_op_module():
    """The ops of every function live in turbogelu/ops.py; code written against
    turbogelu.family keeps working, and asks there."""
    import turbogelu.ops

    for name in (*family.FUNCTIONS, "softmax", "FROM_OUTPUT", "exp2_from_output", "TIERS"):
        assert getattr(family, name) is getattr(turbogelu.ops, name), name
    assert turbogelu.sigmoid is turbogelu.ops.sigmoid
    with pytest.raises(AttributeError, match="turbogelu.family' has no attribute 'nope'"):
        family.nope  # noqa: B018
