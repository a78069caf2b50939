"""Every (function, tier, backward, program) through autograd and through the modules gives the
bits of the op it must call: the forward op with that tier, and the backward op with that tier
and backward (or, for autograd's default of sigmoid, tanh, exp2 and softcap, the from-output
backward on the forward's result). The ops themselves are held to their bits by
tests/test_output_digests.py, so a wrapper that drops ``tier`` or ``backward`` on the way (the
mutations issue 36 found: 1,103 tests passed with softcap's backward ignoring its tier) fails
here.

Also: every check of a second tensor's shape (grad, b, out) refuses a tensor of the same size
and another shape ((2, 3) against (3, 2)), on the CPU and in the fake (meta) kernels."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same_bits

import turbogelu
from turbogelu import family
from turbogelu import ops as tg_ops

OPS = torch.ops.turbogelu
BACKWARDS = ("default", "direct", "matched")
PROGRAMS = ("poly", "cells")
CAP = 2.5
MODULES = {
    "sigmoid": lambda bw, tier: turbogelu.Sigmoid(backward=bw, tier=tier),
    "tanh": lambda bw, tier: turbogelu.Tanh(backward=bw, tier=tier),
    "silu": lambda bw, tier: turbogelu.SiLU(backward=bw, tier=tier),
    "softcap": lambda bw, tier: turbogelu.Softcap(CAP, backward=bw, tier=tier),
    "softplus": lambda bw, tier: turbogelu.Softplus(backward=bw, tier=tier),
}
UNARY = ("sigmoid", "tanh", "silu", "exp2", "softcap", "softplus")


def _inputs(dtype):
    k = torch.arange(1000, dtype=torch.float64)
    x = ((k * 7919) % 1999 - 999) / 111.0  # in [-9, 9]
    g = ((k * 104729) % 997 - 498) / 256.0
    return x.to(dtype), g.to(dtype)


def _function(fn, bw, tier):
    if fn == "softcap":
        return lambda x: turbogelu.softcap(x, CAP, backward=bw, tier=tier)
    return lambda x: getattr(turbogelu, fn)(x, backward=bw, tier=tier)


def _expected(fn, bw, tier, x, g):
    """The forward op's result and the backward op's, called directly."""
    args = (CAP,) if fn == "softcap" else ()
    y = getattr(OPS, fn)(x, *args, tier=tier)
    if bw == "default" and fn in family.FROM_OUTPUT_FUNCTIONS:
        return y, getattr(OPS, f"{fn}_backward_from_output")(g, y, *args)
    return y, getattr(OPS, f"{fn}_backward")(g, x, *args, bw, tier)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize(
    ("fn", "tier"), [(fn, t) for fn in UNARY for t in turbogelu._table.op(fn).tiers]
)
def test_functions_and_modules_call_their_ops(fn, tier, dtype, program):
    x, g = _inputs(dtype)
    paths = {"function": lambda bw, tier: _function(fn, bw, tier)}
    if fn in MODULES:
        paths["module"] = MODULES[fn]
    with tg_ops.use_cpu_kernel(program):
        for bw in BACKWARDS:
            want_y, want_dx = _expected(fn, bw, tier, x, g)
            for path, make in paths.items():
                xr = x.clone().requires_grad_()
                y = make(bw, tier)(xr)
                (dx,) = torch.autograd.grad(y, xr, g)
                assert_same_bits(y.detach(), want_y, f"{path} forward, {bw}")
                assert_same_bits(dx, want_dx, f"{path} backward, {bw}")


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("tier", family.TIERS)
def test_swiglu_function_and_module_call_their_ops(tier, program):
    x, g = _inputs(torch.float32)
    a, b = x[:500].reshape(50, 10), x[500:].reshape(50, 10)
    g = g[:500].reshape(50, 10)
    with tg_ops.use_cpu_kernel(program):
        for bw in BACKWARDS:
            want_y = OPS.swiglu(a, b, tier=tier)
            want_da, want_db = OPS.swiglu_backward(g, a, b, bw, tier)
            ar, br = a.clone().requires_grad_(), b.clone().requires_grad_()
            y = turbogelu.swiglu(ar, br, backward=bw, tier=tier)
            da, db = torch.autograd.grad(y, (ar, br), g)
            assert_same_bits(y.detach(), want_y, bw)
            assert_same_bits(da, want_da, bw)
            assert_same_bits(db, want_db, bw)
            xr = torch.cat([a, b], -1).requires_grad_()
            y = turbogelu.SwiGLU(backward=bw, tier=tier)(xr)
            (dx,) = torch.autograd.grad(y, xr, g)
            assert_same_bits(y.detach(), want_y, f"module {bw}")
            assert_same_bits(dx, torch.cat([want_da, want_db], -1), f"module {bw}")


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("tier", family.TIERS)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_function_and_module_call_their_ops(approximate, tier, program):
    x, g = _inputs(torch.float32)
    with tg_ops.use_cpu_kernel(program):
        for bw in BACKWARDS:
            want_y = OPS.gelu(x, approximate, tier=tier)
            want_dx = OPS.gelu_backward(g, x, approximate, bw, tier)
            for call in (
                lambda t, w=bw: turbogelu.gelu(t, approximate, backward=w, tier=tier),
                turbogelu.GELU(approximate, backward=bw, tier=tier),
            ):
                xr = x.clone().requires_grad_()
                y = call(xr)
                (dx,) = torch.autograd.grad(y, xr, g)
                assert_same_bits(y.detach(), want_y, bw)
                assert_same_bits(dx, want_dx, bw)


# ------------------------------------------------------------------ shapes of the same size


def _transposed_cases(x, other):
    """(name, call) pairs where ``other`` has x's size and another shape."""
    out = torch.empty_like(other)
    return [
        ("gelu.out", lambda: OPS.gelu.out(x, out=out)),
        ("gelu_backward", lambda: OPS.gelu_backward(other, x)),
        ("gelu_backward.out", lambda: OPS.gelu_backward.out(x, x, out=out)),
        ("sigmoid.out", lambda: OPS.sigmoid.out(x, out=out)),
        ("sigmoid_backward", lambda: OPS.sigmoid_backward(other, x)),
        ("tanh_backward.out", lambda: OPS.tanh_backward.out(x, x, out=out)),
        ("silu_backward", lambda: OPS.silu_backward(other, x)),
        ("exp2_backward", lambda: OPS.exp2_backward(other, x)),
        ("softcap_backward", lambda: OPS.softcap_backward(other, x, CAP)),
        ("softcap.out", lambda: OPS.softcap.out(x, CAP, out=out)),
        ("sigmoid_backward_from_output", lambda: OPS.sigmoid_backward_from_output(other, x)),
        ("exp2_backward_from_output.out", lambda: OPS.exp2_backward_from_output.out(x, x, out=out)),
        ("softcap_backward_from_output", lambda: OPS.softcap_backward_from_output(other, x, CAP)),
        ("swiglu", lambda: OPS.swiglu(x, other)),
        ("swiglu.out", lambda: OPS.swiglu.out(x, x, out=out)),
        ("swiglu_backward", lambda: OPS.swiglu_backward(other, x, x)),
        ("swiglu_backward b", lambda: OPS.swiglu_backward(x, x, other)),
        (
            "swiglu_backward.out",
            lambda: OPS.swiglu_backward.out(x, x, x, grad_a=out, grad_b=torch.empty_like(x)),
        ),
    ]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_same_size_other_shape_is_refused(device):
    x = torch.zeros(2, 3, device=device)
    other = torch.zeros(3, 2, device=device)
    for name, call in _transposed_cases(x, other):
        with pytest.raises((RuntimeError, ValueError), match=r"shape \[3, 2\]|\[2, 3\]"):
            call()
            pytest.fail(f"{name}: a (3, 2) tensor was taken for a (2, 3) one")
