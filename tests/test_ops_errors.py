"""The errors of every row of the kernels' table (op_rows.ROWS: GELU's two forms and the
family) that test_ops.py's error section does not reach: complex and non-tensor inputs to every
form, the empty tensor still checked, autograd and the in-place / out= forms (refused on
tensors requiring grad, the version counter bumped, usable under no_grad); then GELU's own
argument, approximate."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_same_bits
from op_references import OPS
from op_rows import ROWS

import turbogelu

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

UNARY_ROWS = [r for r in ROWS if not r.gated]  # the rows with in-place forms


def _outs(row, t):
    """An out= for the row's backward: t, or swiglu's pair."""
    return (t, torch.empty_like(t)) if row.gated else t


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_complex_requiring_grad_is_refused(row):
    x = torch.ones(3, dtype=torch.complex64, requires_grad=True)
    with pytest.raises(TypeError, match="bfloat16"):
        row.function(*row.inputs(x))


@pytest.mark.parametrize("bad", [[1.0, 2.0], 1.5, np.ones(3, dtype=np.float32), None], ids=str)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_non_tensor_raises_type_error(row, bad):
    x = torch.ones(3)
    calls = [
        lambda: row.function(*row.inputs(x)[:-1], bad),
        lambda: row.function(bad, *row.inputs(x)[1:]),
        lambda: row.raw_forward(bad, *row.inputs(x)[1:]),
        lambda: row.raw_backward(bad, *row.inputs(x)),
        lambda: row.raw_backward(x, bad, *row.inputs(x)[1:]),
    ]
    calls += [lambda: row.function_(bad)] if not row.gated else []
    calls += [lambda: row.module()(bad)] if row.op.module else []  # SwiGLU splits its one input
    for call in calls:
        with pytest.raises(TypeError, match="expected a torch.Tensor"):
            call()


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_the_empty_tensor_is_checked_too(row):
    x = torch.empty(0)
    with pytest.raises(ValueError, match="backward must be"):
        row.forward(row.inputs(x), "foo")()
    with pytest.raises(TypeError, match="supported dtypes"):
        row.forward(row.inputs(x.int()))()


@pytest.mark.parametrize("row", UNARY_ROWS, ids=str)
def test_inplace_on_tensor_requiring_grad_is_refused(row):
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="autograd"):
        row.function_(x)
    y = x * 2  # a non-leaf
    with pytest.raises(RuntimeError, match="autograd"):
        row.function_(y)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_out_forms_refuse_tensors_requiring_grad(row):
    x = torch.randn(4, requires_grad=True)
    xd = x.detach()
    calls = [
        lambda: row.raw_forward(*row.inputs(x), out=torch.empty(4)),
        lambda: row.raw_forward(*row.inputs(xd), out=torch.empty(4, requires_grad=True)),
        lambda: row.raw_backward(x, *row.inputs(xd), out=_outs(row, torch.empty(4))),
        lambda: row.raw_backward(xd, *row.inputs(x), out=_outs(row, torch.empty(4))),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="autograd"):
            call()


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_inplace_and_out_forms_bump_the_version_counter(row):
    """Overwriting a tensor that another op saved for backward is caught at backward time."""
    writes = [
        lambda t: row.raw_forward(*row.inputs(torch.randn(5)), out=t),
        lambda t: row.raw_backward(torch.randn(5), *row.inputs(torch.randn(5)), out=_outs(row, t)),
    ]
    writes += [lambda t: row.function_(t)] if not row.gated else []
    for write in writes:
        w = torch.randn(5, requires_grad=True)
        x = torch.randn(5)
        y = w * x  # saves x
        version = x._version
        write(x)
        assert x._version > version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_inplace_and_out_forms_work_under_no_grad(row):
    x0 = torch.randn(6) * 3
    x = x0.clone().requires_grad_()
    xs, xs0 = row.inputs(x), row.inputs(x0)
    out = torch.empty(6)
    dout = _outs(row, torch.empty(6))
    with torch.no_grad():
        row.raw_forward(*xs, out=out)
        row.raw_backward(x, *xs, out=dout)
        if not row.gated:
            row.function_(x)
    assert_same_bits(out, row.forward(xs0)())
    want = row.backward(x0, xs0)()
    for a, b in zip(dout if row.gated else [dout], want if row.gated else [want], strict=True):
        assert_same_bits(a, b)
    if not row.gated:
        assert_same_bits(x.detach(), row.forward(xs0)())
        # under no_grad the version counter is still bumped for a tensor saved elsewhere
        w = torch.randn(6, requires_grad=True)
        b = torch.randn(6)
        y = w * b
        with torch.no_grad():
            row.function_(b)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


# ------------------------------------------------------------------ GELU's approximate


def test_bad_approximate_raises_value_error():
    x = torch.randn(5)
    for call in (
        lambda: OPS.gelu(x, "foo"),
        lambda: turbogelu.gelu(x, "exact"),
        lambda: OPS.gelu_(x.clone(), "foo"),
        lambda: OPS.gelu.out(x, "foo", out=torch.empty(5)),
        lambda: OPS.gelu_backward(x, x, "foo"),
        lambda: OPS.gelu_backward.out(x, x, "foo", out=torch.empty(5)),
        lambda: turbogelu.GELU("foo"),
    ):
        with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
            call()
    with pytest.raises(ValueError):  # the empty tensor does not skip the check
        OPS.gelu(torch.empty(0), "foo")
