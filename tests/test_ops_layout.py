"""The turbogelu ops over shapes, sizes and memory layouts: any shape, sizes around the SIMD
loops' tails, non-contiguous inputs and outputs, out= into itself and overlaps, in place on
views."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import (
    APPROXIMATES,
    assert_same_bits,
    load_spec,
)
from op_references import (
    AWKWARD_SIZES,
    FORWARD_ATOL,
    OPS,
    assert_close_to_reference,
    is_dense,
    reference_gelu,
)

import turbogelu
from turbogelu.approx import replay
from turbogelu.approx import spec as spec_mod

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")


# ------------------------------------------------------------------ shapes, sizes, layouts


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0, 2), (1,), (2, 3, 4)])
def test_any_shape(isa, dtype, shape):
    x = (torch.randn(shape, dtype=torch.float64) * 3).to(dtype)
    y = OPS.gelu(x, "none")
    assert y.shape == x.shape and y.dtype == dtype
    assert_close_to_reference(y, reference_gelu(x, "none"), FORWARD_ATOL)
    d = OPS.gelu_backward(x, x, "tanh", "default")
    assert d.shape == x.shape and d.dtype == dtype
    out = torch.empty(shape, dtype=dtype)
    OPS.gelu.out(x, "none", out=out)
    assert_same_bits(out, y)
    assert turbogelu.gelu_(x.clone(), "none").shape == x.shape


@pytest.mark.parametrize("n", AWKWARD_SIZES)
def test_awkward_sizes_match_elementwise(isa, dtype, n):
    """Sizes around the 8/16-lane SIMD loops' tails, starting at an unaligned address: each
    element gets the bits it gets when computed alone."""
    g = torch.Generator().manual_seed(n)
    buf = (torch.randn(n + 1, generator=g, dtype=torch.float64) * 4).to(dtype)
    gbuf = torch.randn(n + 1, generator=g, dtype=torch.float64).to(dtype)
    x, grad = buf[1:], gbuf[1:]  # storage offset 1
    ap = APPROXIMATES[n % 2]
    y = OPS.gelu(x, ap)
    d = OPS.gelu_backward(grad, x, ap, "default")
    y_each = torch.cat([OPS.gelu(x[i : i + 1].clone(), ap) for i in range(n)])
    d_each = torch.cat(
        [OPS.gelu_backward(grad[i : i + 1].clone(), x[i : i + 1].clone(), ap) for i in range(n)]
    )
    assert_same_bits(y, y_each)
    assert_same_bits(d, d_each)
    if dtype != torch.float64:  # the kernels' float32 arithmetic, replayed in numpy
        spec = load_spec(ap)
        fwd = spec_mod.part_values(spec["forward"])
        bwd = spec_mod.part_values(spec["backward_" + spec["default_backward"]])
        xf = x.float().numpy()
        y32 = torch.from_numpy(replay.forward32(xf, fwd)).to(dtype)
        d32 = replay.backward32(xf, bwd, grad.float().numpy())
        assert_same_bits(y, y32)
        assert_same_bits(d, torch.from_numpy(d32).to(dtype))


def _views(dtype):
    """(name, view, base): non-contiguous inputs of every kind."""
    g = torch.Generator().manual_seed(5)

    def randn(*shape):
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 3).to(dtype)

    return [
        ("transposed", randn(17, 9).t()),
        ("step2", randn(9, 34)[:, ::2]),
        ("step2_1d", randn(83)[::2]),
        ("expanded", randn(1, 17).expand(5, 17)),
        ("broadcast_0stride_col", randn(7, 1).expand(7, 19)),
        ("scalar_expanded", randn().expand(3, 4)),
        ("channels_last", randn(2, 3, 5, 7).to(memory_format=torch.channels_last)),
        ("channels_last_sliced", randn(2, 6, 5, 7).to(memory_format=torch.channels_last)[:, ::2]),
        ("permuted_3d", randn(3, 4, 5).permute(2, 0, 1)),
        ("offset", randn(100)[3:44]),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("which", [v[0] for v in _views(torch.float32)])
def test_non_contiguous_inputs(dtype, which):
    (x,) = [v for name, v in _views(dtype) if name == which]
    xc = x.contiguous()
    y = OPS.gelu(x, "tanh")
    assert y.shape == x.shape and y.dtype == dtype
    assert_same_bits(y.contiguous(), OPS.gelu(xc, "tanh"))
    if is_dense(x):  # a dense layout is kept, like F.gelu keeps it
        assert y.stride() == x.stride()
    grad = (torch.randn(x.shape) * 2).to(dtype)
    for gr, xx in ((grad, x), (x, grad), (x, x)):
        d = OPS.gelu_backward(gr, xx, "none", "direct")
        assert_same_bits(d.contiguous(), OPS.gelu_backward(gr.contiguous(), xx.contiguous()))


@pytest.mark.parametrize(
    "make_out",
    [
        pytest.param(lambda s: torch.empty(s[1], s[0]).t(), id="transposed"),
        pytest.param(lambda s: torch.empty(s[0], 2 * s[1])[:, ::2], id="step2"),
        pytest.param(lambda s: torch.empty(s[0] + 3, s[1])[3:], id="offset"),
    ],
)
def test_out_into_non_contiguous_out(make_out):
    x = torch.randn(7, 19) * 3
    for source in (x, x.t().contiguous().t()):
        out = make_out(x.shape)
        strides, ptr = out.stride(), out.data_ptr()
        OPS.gelu.out(source, "none", out=out)
        assert out.stride() == strides and out.data_ptr() == ptr
        assert_same_bits(out, OPS.gelu(x, "none"))
        out = make_out(x.shape)
        OPS.gelu_backward.out(x, source, "tanh", "matched", out=out)
        assert out.stride() == strides
        assert_same_bits(out, OPS.gelu_backward(x, x, "tanh", "matched"))


def test_out_into_itself_and_overlap_errors():
    x = torch.randn(50) * 3
    expected = OPS.gelu(x)
    y = x.clone()
    OPS.gelu.out(y, out=y)  # out is x: each element read, then written
    assert_same_bits(y, expected)
    # out is x's memory in another layout: refused, as ATen refuses torch.sin(x, out=x.t())
    sq = torch.randn(9, 9)
    with pytest.raises(RuntimeError, match="single memory location"):
        OPS.gelu.out(sq, out=sq.t())
    # the backward written into grad's own memory
    g, xb = torch.randn(33), torch.randn(33) * 3
    expected = OPS.gelu_backward(g, xb, "tanh")
    OPS.gelu_backward.out(g, xb, "tanh", out=g)
    assert_same_bits(g, expected)
    base = torch.randn(10)
    with pytest.raises(RuntimeError, match="single memory location"):
        OPS.gelu.out(base[:-1], out=base[1:])  # partial overlap
    with pytest.raises(RuntimeError, match="single memory location"):
        OPS.gelu_(torch.randn(1, 4).expand(3, 4))  # out overlaps itself


def test_inplace_on_views_touches_only_the_view():
    base = torch.randn(6, 10) * 3
    for index in (np.s_[:, ::2], np.s_[1:4, 2:7], np.s_[::3]):
        b = base.clone()
        expected = base.clone()
        expected[index] = OPS.gelu(base[index], "tanh")
        turbogelu.gelu_(b[index], "tanh")
        assert_same_bits(b, expected)
    t = base.clone().t()  # a dense non-contiguous tensor: written in place directly
    turbogelu.gelu_(t)
    assert_same_bits(t, OPS.gelu(base.t()))
