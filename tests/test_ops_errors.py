"""The turbogelu ops' errors: unsupported dtypes, bad arguments, mismatched tensors, autograd
and the in-place / out= forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_same_bits
from op_references import OPS

import turbogelu

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "bad_dtype", [torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64]
)
def test_unsupported_dtypes_raise_type_error(bad_dtype):
    x = torch.ones(4, dtype=bad_dtype)
    match = "supported dtypes are float32, float64, float16 and bfloat16"
    calls = [
        lambda: OPS.gelu(x),
        lambda: turbogelu.gelu(x),
        lambda: OPS.gelu_(x.clone()),
        lambda: OPS.gelu.out(x, out=torch.empty_like(x)),
        lambda: OPS.gelu_backward(x, x),
        lambda: OPS.gelu_backward.out(x, x, out=torch.empty_like(x)),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=match):
            call()


def test_complex_requiring_grad_raises_type_error():
    x = torch.ones(3, dtype=torch.complex64, requires_grad=True)
    with pytest.raises(TypeError, match="bfloat16"):
        turbogelu.gelu(x)


def test_bad_approximate_and_backward_raise_value_error():
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
    for call in (
        lambda: OPS.gelu(x, backward="foo"),
        lambda: turbogelu.gelu(x, backward="Matched"),
        lambda: OPS.gelu_backward(x, x, "none", "foo"),
        lambda: OPS.gelu_backward.out(x, x, "none", "foo", out=torch.empty(5)),
        lambda: turbogelu.GELU(backward="foo"),
    ):
        with pytest.raises(ValueError, match="backward must be"):
            call()
    # the empty tensor does not skip the checks
    with pytest.raises(ValueError):
        OPS.gelu(torch.empty(0), "foo")


def test_backward_dtype_and_shape_mismatch():
    x = torch.randn(2, 3)
    with pytest.raises(TypeError, match="grad has dtype"):
        OPS.gelu_backward(x.double(), x)
    with pytest.raises(TypeError, match="grad has dtype"):
        OPS.gelu_backward.out(x.half(), x, out=torch.empty(2, 3))
    with pytest.raises(RuntimeError, match="shape"):
        OPS.gelu_backward(torch.randn(3), x)  # no broadcasting
    with pytest.raises(RuntimeError, match="shape"):
        OPS.gelu_backward(torch.randn(3, 2), x)


def test_out_with_wrong_dtype_raises_type_error():
    x = torch.randn(4)
    with pytest.raises(TypeError, match="out has dtype"):
        OPS.gelu.out(x, out=torch.empty(4, dtype=torch.float64))
    with pytest.raises(TypeError, match="out has dtype"):
        turbogelu.gelu_op(x, out=torch.empty(4, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="out has dtype"):
        turbogelu.gelu_backward_op(x, x, out=torch.empty(4, dtype=torch.float16))


@pytest.mark.parametrize("bad", [[1.0, 2.0], 1.5, np.ones(3, dtype=np.float32), None])
def test_non_tensor_raises_type_error(bad):
    x = torch.ones(3)
    for call in (
        lambda: turbogelu.gelu(bad),
        lambda: turbogelu.gelu_(bad),
        lambda: turbogelu.gelu_op(bad),
        lambda: turbogelu.gelu_backward_op(bad, x),
        lambda: turbogelu.gelu_backward_op(x, bad),
        lambda: turbogelu.GELU()(bad),
    ):
        with pytest.raises(TypeError, match="expected a torch.Tensor"):
            call()


def test_inplace_on_tensor_requiring_grad_is_refused():
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_(x)
    y = x * 2  # a non-leaf
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_(y)


def test_out_forms_refuse_tensors_requiring_grad():
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_op(x, out=torch.empty(4))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_op(x.detach(), out=torch.empty(4, requires_grad=True))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_backward_op(x, x.detach(), out=torch.empty(4))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_backward_op(x.detach(), x, out=torch.empty(4))


def test_inplace_and_out_forms_bump_the_version_counter():
    """Overwriting a tensor that another op saved for backward is caught at backward time."""
    for write in (
        lambda t: turbogelu.gelu_(t),
        lambda t: turbogelu.gelu_op(torch.randn(5), out=t),
        lambda t: turbogelu.gelu_backward_op(torch.randn(5), torch.randn(5), out=t),
    ):
        w = torch.randn(5, requires_grad=True)
        x = torch.randn(5)
        y = w * x  # saves x
        version = x._version
        write(x)
        assert x._version > version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_inplace_and_out_forms_work_under_no_grad():
    x0 = torch.randn(6) * 3
    x = x0.clone().requires_grad_()
    out = torch.empty(6)
    dout = torch.empty(6)
    with torch.no_grad():
        turbogelu.gelu_op(x, out=out)
        turbogelu.gelu_backward_op(x, x, out=dout)
        turbogelu.gelu_(x)
    assert_same_bits(out, OPS.gelu(x0))
    assert_same_bits(dout, OPS.gelu_backward(x0, x0))
    assert_same_bits(x.detach(), OPS.gelu(x0))
    # under no_grad the version counter is still bumped for a tensor saved elsewhere
    w = torch.randn(6, requires_grad=True)
    b = torch.randn(6)
    y = w * b
    with torch.no_grad():
        turbogelu.gelu_(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
